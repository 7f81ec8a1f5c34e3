package sender

import (
	"fmt"

	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// credits is the sender's view of write-mode credits: block grants must come
// in sequence order, and stream block k goes to the block granted with Seq k.
type credits struct {
	next  uint64 // sequence number the next credit must carry
	queue []wire.Credit
	nbufs uint32
}

func (c *credits) add(cr wire.Credit) error {
	if cr.Seq != c.next {
		return fmt.Errorf("%w: credit for block %d, expected block %d", wire.ErrProtocol, cr.Seq, c.next)
	}
	if cr.Index >= c.nbufs {
		return fmt.Errorf("%w: credit names ring index %d of a %d-block ring", wire.ErrProtocol, cr.Index, c.nbufs)
	}
	c.queue = append(c.queue, cr)
	c.next++
	return nil
}

// lookup returns the grant for stream block seq, if it has arrived and has
// not been released.
func (c *credits) lookup(seq uint64) (wire.Credit, bool) {
	if len(c.queue) == 0 || seq < c.queue[0].Seq || seq-c.queue[0].Seq >= uint64(len(c.queue)) {
		return wire.Credit{}, false
	}
	return c.queue[seq-c.queue[0].Seq], true
}

// release forgets the grants of blocks before seq (every slice of them has
// been posted).
func (c *credits) release(seq uint64) {
	k := 0
	for k < len(c.queue) && c.queue[k].Seq < seq {
		k++
	}
	if k > 0 {
		c.queue = append(c.queue[:0], c.queue[k:]...)
	}
}
