package rc

import (
	"fmt"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/placement"
	"github.com/ringcap/ringcap/pkg/capture/status"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// Config is what the receive side needs of the receiver's settings.
type Config struct {
	Mode     wire.Mode
	RxDepth  int // receive WRs per queue pair
	Geometry wire.Geometry
}

// Receives is a session's receive side, per queue pair: the receive work
// requests posted and used, where send mode's posting has got to and what the
// sender was told of it; it lands completions in the observation's window and
// counts them in the queue pairs' counters.
type Receives struct {
	cfg      Config
	ep       fabric.Endpoint
	win      *placement.Window
	qpc      []status.QPCounters
	posted   []int           // receive WRs outstanding per queue pair
	consumed []int           // write mode: scatter-less receive WRs used up since the last repost
	empty    []fabric.RecvWR // reused by postEmpty
	slices   []fabric.RecvWR // reused by PostSlices
	cursor   []uint64        // per queue pair, its next slice to post receives for (send mode)
	untold   []int           // per queue pair, receives posted that the sender was not told of (send mode, see QueueGrants)
}

// New returns the receive side of ep's queue pairs, landing data in win and
// counting it in qpc (one per queue pair).
func New(cfg Config, ep fabric.Endpoint, win *placement.Window, qpc []status.QPCounters) *Receives {
	nq := len(qpc)
	rv := &Receives{cfg: cfg, ep: ep, win: win, qpc: qpc, posted: make([]int, nq), consumed: make([]int, nq), cursor: make([]uint64, nq), untold: make([]int, nq)}
	for q := range rv.cursor {
		rv.cursor[q] = cfg.Geometry.FirstOnQP(q)
	}
	return rv
}

// Repost replaces the scatter-less receive WRs that write-mode completions
// consumed, one post per queue pair.
func (rv *Receives) Repost() error {
	for q, n := range rv.consumed {
		if n > 0 {
			rv.consumed[q] = 0
			if err := rv.postEmpty(q, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// postEmpty posts n receive WRs without scatter entries on queue pair q.
func (rv *Receives) postEmpty(q, n int) error {
	if n <= 0 {
		return nil
	}
	if cap(rv.empty) < n {
		rv.empty = make([]fabric.RecvWR, n)
	}
	wrs := rv.empty[:n]
	for i := range wrs {
		wrs[i] = fabric.RecvWR{ID: uint64(q)}
	}
	if err := rv.ep.PostRecv(q, wrs); err != nil {
		return fmt.Errorf("post %d receives on queue pair %d: %w", n, q, err)
	}
	rv.posted[q] += n
	return nil
}

// PostSlices keeps every receive queue as full as the open blocks allow
// (send mode): queue pair q gets slices q, q+N, q+2N, ... in order.
func (rv *Receives) PostSlices() error {
	_, endSlice := rv.win.Span()
	if end, ok := rv.win.End(); ok {
		endSlice = min(endSlice, rv.cfg.Geometry.Slices(end))
	}
	wrs := rv.slices[:0]
	defer func() { rv.slices = wrs[:0] }() // keeps the grown array for the next call
	for q := range rv.cursor {
		wrs = wrs[:0]
		for rv.cursor[q] < endSlice && rv.posted[q]+len(wrs) < rv.cfg.RxDepth {
			sl := rv.cursor[q]
			seq, off, length := rv.win.Slice(sl)
			idx := rv.win.Index(seq)
			wrs = append(wrs, fabric.RecvWR{ID: sl, Block: idx, Offset: off, Length: length})
			rv.cursor[q] = rv.cfg.Geometry.NextOnQP(sl)
		}
		if len(wrs) == 0 {
			continue
		}
		if err := rv.ep.PostRecv(q, wrs); err != nil {
			return fmt.Errorf("post %d receives on queue pair %d: %w", len(wrs), q, err)
		}
		rv.posted[q] += len(wrs)
		rv.untold[q] += len(wrs)
	}
	return nil
}

// QueueGrants queues a wire.Posted for each queue pair whose sender is due to
// hear of the receives posted since it was last told (send mode); it reports
// whether it queued any. The sender sends a slice only below what it was
// told, and every slice below that has its receive posted: no SEND finds its
// queue pair without one. News goes out in batches, to keep control traffic
// low, yet without a deadlock: a queue pair's news goes out once it amounts
// to half the receive queue, or as soon as fewer than half a queue of the
// slices the sender was told of are still to arrive (a sender that may run
// dry on it hears at once). A sender of a version before wire.PostedSince
// sends without grants, and hears of none.
func (rv *Receives) QueueGrants(k *wire.Conn) (bool, error) {
	if k.Version() < wire.PostedSince {
		return false, nil
	}
	half := max(1, rv.cfg.RxDepth/2)
	queued := false
	for q, n := range rv.untold {
		if n == 0 || n < half && rv.posted[q]-n >= half {
			continue
		}
		if err := k.QueuePosted(wire.Posted{QP: uint16(q), Upto: rv.cursor[q]}); err != nil {
			return queued, err
		}
		rv.untold[q], queued = 0, true
	}
	return queued, nil
}

// PostFirst posts the receives the first block needs: empty ones for the
// write-mode immediates, or the block's slices in send mode.
func (rv *Receives) PostFirst() error {
	if rv.cfg.Mode != wire.ModeWrite {
		return rv.PostSlices()
	}
	for q := range rv.posted {
		if err := rv.postEmpty(q, rv.cfg.RxDepth); err != nil {
			return err
		}
	}
	return nil
}

// Usable is the receives the sender can still use: on the queue pair
// with the fewest, the posted receives it was told of (send mode) or the
// posted receives its writes' immediates consume (write mode), times the queue
// pairs.
func (rv *Receives) Usable() int {
	fewest := -1
	for q, n := range rv.posted {
		n -= rv.untold[q] // all 0 in write mode
		if fewest < 0 || n < fewest {
			fewest = n
		}
	}
	return max(fewest, 0) * len(rv.posted)
}

// CompletionsPerBlock is how many receive completions fill a block: one a
// message in send mode; in write mode one a block (the immediate of its last
// write), which leaves nothing to coalesce.
func (rv *Receives) CompletionsPerBlock() int {
	if rv.cfg.Mode == wire.ModeSend {
		return int(rv.cfg.Geometry.SlicesPerBlock())
	}
	return 1
}
