package vdif

import (
	"errors"
	"fmt"
)

// MaxThreads is the number of thread IDs VDIF can name (10 bits).
const MaxThreads = 1024

// Rule says where a stream's frames go: every second holds FramesPerSecond
// frame numbers, and each frame number one frame of each thread, in the
// order of ThreadIDs (or of the threads' first appearance).
type Rule struct {
	// FramesPerSecond is the number of frames per second of each thread.
	FramesPerSecond uint32
	// PayloadBytes is each frame's data array in bytes (its length less
	// the header); 0 takes it from the first frame placed.
	PayloadBytes uint32
	// ThreadIDs are the stream's threads in the order their frames are
	// interleaved; when empty, Threads threads are taken in the order they
	// first appear.
	ThreadIDs []uint16
	// Threads is the number of threads when ThreadIDs is empty.
	Threads int
}

// Validate checks that the rule can place frames.
func (r Rule) Validate() error {
	switch {
	case r.FramesPerSecond == 0:
		return errors.New("frames per second is 0")
	case r.FramesPerSecond >= 1<<24:
		return fmt.Errorf("%d frames per second do not fit the 24-bit frame number", r.FramesPerSecond)
	case r.PayloadBytes%8 != 0:
		return fmt.Errorf("a data array of %d bytes is not a multiple of 8", r.PayloadBytes)
	case len(r.ThreadIDs) == 0 && (r.Threads <= 0 || r.Threads > MaxThreads):
		return fmt.Errorf("%d threads: give the thread IDs or between 1 and %d threads", r.Threads, MaxThreads)
	case len(r.ThreadIDs) > 0 && r.Threads != 0 && r.Threads != len(r.ThreadIDs):
		return fmt.Errorf("%d threads but %d thread IDs", r.Threads, len(r.ThreadIDs))
	}
	var seen [MaxThreads]bool
	for _, id := range r.ThreadIDs {
		if id >= MaxThreads {
			return fmt.Errorf("thread ID %d does not fit in 10 bits", id)
		}
		if seen[id] {
			return fmt.Errorf("thread ID %d given twice", id)
		}
		seen[id] = true
	}
	return nil
}

// ThreadCount is the number of threads the rule places.
func (r Rule) ThreadCount() int {
	if len(r.ThreadIDs) > 0 {
		return len(r.ThreadIDs)
	}
	return r.Threads
}
