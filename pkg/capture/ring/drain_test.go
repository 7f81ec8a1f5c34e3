package ring

import (
	"testing"

	"github.com/ringcap/ringcap/pkg/dada"
)

// A slot that has read everything (or a ring nothing was written to) needs
// no wait.
func TestUnreadBlocksPerSlot(t *testing.T) {
	st := dada.RingState{WBufCurr: 10, Readers: []dada.ReaderState{{RBufs: 10}, {RBufs: 7}, {RBufs: 0}}}
	got := unreadBlocks(st)
	if got[0] != 0 || got[1] != 3 || got[2] != 10 {
		t.Fatalf("unread %v", got)
	}
	if d := describeUnread(got); d != "reader slot 1 has 3 unread, reader slot 2 has 10 unread" {
		t.Fatalf("describe %q", d)
	}
	if d := describeUnread(unreadBlocks(dada.RingState{Readers: []dada.ReaderState{{}}})); d != "" {
		t.Fatalf("empty ring: %q", d)
	}
}
