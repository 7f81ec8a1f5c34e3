package sender

import (
	"fmt"

	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// grants is the sender's view of send-mode receive grants: per queue pair,
// the slice below which the receiver has posted a receive for every one of
// that queue pair's slices (wire.Posted). A slice at or past its queue
// pair's grant would find no receive: RC answers it with receiver-not-ready
// NAKs and retries.
type grants []uint64

// add takes a Posted: a grant on a queue pair the connection does not have,
// or one below what was already granted, is a protocol error.
func (g grants) add(p wire.Posted) error {
	q := int(p.QP)
	if q >= len(g) {
		return fmt.Errorf("%w: receives posted on queue pair %d of %d", wire.ErrProtocol, p.QP, len(g))
	}
	if p.Upto < g[q] {
		return fmt.Errorf("%w: queue pair %d: receives posted below slice %d, after below slice %d", wire.ErrProtocol, q, p.Upto, g[q])
	}
	g[q] = p.Upto
	return nil
}

// allows reports whether slice sl may go out on queue pair q.
func (g grants) allows(q int, sl uint64) bool { return sl < g[q] }
