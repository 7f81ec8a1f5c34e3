package assemble

import (
	"errors"
	"testing"
)

// A gap longer than the window (an outage, a burst the kernel dropped) does not end the
// stream: the first DefaultResyncAfter-1 payloads past it are out-of-window, the next
// one moves the window to them, the blocks skipped zero-filled and recorded, and the rest
// land in place. A lone stray far ahead between in-window payloads stays out-of-window.
func TestResyncAfterLongGap(t *testing.T) {
	const n = 1024 // four payloads a block
	const total = 40 * bsize
	s := newStream(total, bsize)
	got := assemble(t, 8, bsize, 2, 1, func(a *Assembler) {
		for off := uint64(0); off < total; off += n {
			blk := off / bsize
			switch {
			case blk == 2 && off%bsize == 0:
				s.put(t, a, 30*bsize, n) // a stray 27 blocks ahead: out-of-window
				s.deliver(t, a, off, n)
			case blk >= 3 && blk < 20: // the gap
			case blk >= 20 && off < 20*bsize+(DefaultResyncAfter-1)*n:
				s.put(t, a, off, n) // out-of-window until the run is long enough
			default:
				s.deliver(t, a, off, n)
			}
		}
	})
	s.check(t, got)
	c := got.counts
	// The stray, then the DefaultResyncAfter-1 payloads before the one that moves the window.
	if c.OutOfWindow != DefaultResyncAfter || c.Late != 0 || c.Blocks != 40 {
		t.Fatalf("counters %+v, want %d out-of-window", c, DefaultResyncAfter)
	}
	if r := got.records[10]; r.Received != 0 || len(r.Missing) != 1 || r.Missing[0] != (Range{0, bsize}) {
		t.Fatalf("record of a skipped block: %+v", r)
	}
}

// A stream that jumps further than MaxJump blocks has left the observation: Put fails
// with a *JumpError once the run shows it, and Close still hands over what arrived.
func TestJumpTooFar(t *testing.T) {
	const n = 1024
	s := newStream(200*bsize, bsize)
	var jump *JumpError
	got := assemble(t, 4, bsize, 2, 1, func(a *Assembler) {
		for off := uint64(0); off < 2*bsize; off += n {
			s.deliver(t, a, off, n)
		}
		for i := range uint64(DefaultResyncAfter) {
			err := a.Put(150*bsize+i*n, s.packet(150*bsize+i*n, n))
			if i < DefaultResyncAfter-1 && err != nil || i == DefaultResyncAfter-1 && !errors.As(err, &jump) {
				t.Fatalf("put %d past the jump: %v", i, err)
			}
		}
	})
	s.check(t, got)
	if jump.Max != DefaultMaxJumpRings*4 || jump.Blocks != 151-2 {
		t.Fatalf("jump %+v", jump)
	}
	if c := got.counts; c.OutOfWindow != DefaultResyncAfter || c.Received != 8 {
		t.Fatalf("counters %+v", c)
	}
}
