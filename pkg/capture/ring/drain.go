package ring

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/ringcap/ringcap/pkg/dada"
)

// drainPoll is how often DrainReaders looks at the readers' progress.
const drainPoll = 20 * time.Millisecond

// unreadBlocks returns, per reader slot of a data ring, how many of the
// blocks the writer has marked filled the slot has not yet cleared.
func unreadBlocks(st dada.RingState) []uint64 {
	out := make([]uint64, len(st.Readers))
	for i, r := range st.Readers {
		if st.WBufCurr > r.RBufs {
			out[i] = st.WBufCurr - r.RBufs
		}
	}
	return out
}

// readProgress is the sum of the reader slots' block counts: it grows
// whenever any reader clears a block.
func readProgress(st dada.RingState) uint64 {
	var n uint64
	for _, r := range st.Readers {
		n += r.RBufs
	}
	return n
}

// describeUnread names the slots with unread blocks ("" when none has).
func describeUnread(unread []uint64) string {
	var parts []string
	for i, n := range unread {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("reader slot %d has %d unread", i, n))
		}
	}
	return strings.Join(parts, ", ")
}

// DrainReaders waits, before a ring this run created is destroyed, until
// every reader slot has cleared every block the writer filled, so that
// destroying the ring takes nothing from a reader still reading it. It gives
// up when no reader has cleared a block for stall (0: it does not wait) and
// returns an error naming what was left unread; ctx ends the wait at once.
func DrainReaders(ctx context.Context, h *dada.HDU, stall time.Duration, log *slog.Logger) error {
	last, lastAt := uint64(0), time.Now()
	for first := true; ; first = false {
		snap, err := h.Snapshot()
		if err != nil {
			return fmt.Errorf("wait for the readers of ring %s: %w", h.Key(), err)
		}
		unread := unreadBlocks(snap.Data)
		left := describeUnread(unread)
		if left == "" {
			return nil
		}
		if p := readProgress(snap.Data); first || p != last {
			last, lastAt = p, time.Now()
		}
		if first {
			log.Info("Waiting for the readers before destroying the ring", "key", h.Key().String(), "unread", left, "stall", stall.String())
		}
		if time.Since(lastAt) >= stall {
			return fmt.Errorf("destroy ring %s with blocks unread (%s of %d filled): no reader cleared a block for %s", h.Key(), left, snap.Data.WBufCurr, stall)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(drainPoll):
		}
	}
}
