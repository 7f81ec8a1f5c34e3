package assemble

import "fmt"

// Defaults of Config.ResyncAfter and Config.MaxJump.
const (
	DefaultResyncAfter  = 8
	DefaultMaxJumpRings = 4
)

// JumpError says that the stream jumped further ahead than a resync may zero-fill: it
// has left the observation (a sender restarted with another timestamp base).
type JumpError struct {
	Blocks, Max uint64 // blocks past the window, and the most a resync fills
}

func (e *JumpError) Error() string {
	return fmt.Sprintf("assemble: the stream jumped %d blocks past the reorder window, more than the %d a resync zero-fills: it has left this observation", e.Blocks, e.Max)
}

// resync tells one stray payload far ahead of the window (a corrupt timestamp: dropped)
// from a stream that has moved on (a run of them: followed).
type resync struct {
	after  int    // out-of-window payloads in a row that show the stream moved
	max    uint64 // the most blocks a resync zero-fills
	strays int    // out-of-window payloads in a row so far
}

func newResync(c Config) resync {
	r := resync{after: c.ResyncAfter, max: uint64(c.MaxJump)}
	if r.after == 0 {
		r.after = DefaultResyncAfter
	}
	if r.max == 0 {
		r.max = uint64(DefaultMaxJumpRings * c.RingBlocks)
	}
	return r
}

// moved counts a payload reaching block last, past the window's end (the first block
// after it); it reports whether the window should follow it, or a *JumpError when the
// stream moved further than a resync fills.
func (r *resync) moved(end, last uint64) (bool, error) {
	r.strays++
	if r.strays < r.after {
		return false, nil
	}
	if jump := last - end; jump > r.max {
		return false, &JumpError{Blocks: jump, Max: r.max}
	}
	r.strays = 0
	return true, nil
}
