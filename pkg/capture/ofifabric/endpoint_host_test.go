//go:build linux && cgo

package ofifabric

import (
	"context"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/rdma/ofi"
)

// An endpoint that fails part way (here: a completion queue of 2^50 entries,
// more bytes than a process's address space holds whatever the overcommit
// policy; 2^41 entries fitted under vm.overcommit_memory=1 and sometimes
// opened) returns the error and closes what it had opened; it used to close
// its nil result instead and panic.
func TestOpenFailingPartWayClosesWhatItOpened(t *testing.T) {
	before := ofi.Live()
	s, err := NewSender(Config{Provider: "shm", Mode: wire.ModeSend}, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if ep, err := s.Open(context.Background(), fabric.EndpointConfig{QPs: 1, SendDepth: 1 << 49}); ep != nil || err == nil || !strings.Contains(err.Error(), "endpoint 0 of 1") {
		t.Fatalf("open with a 2^50-entry completion queue: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := ofi.Live(); got != before {
		t.Fatalf("after Close: %+v, before %+v", got, before)
	}
}
