//go:build vm

package verbsfabric

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/rdma/verbs"
	"github.com/ringcap/ringcap/test/vm/vmtest"
)

// The verbs endpoint posts from threads of its own (verbs.PostThread), and
// reports a post the device refused as the sender's other posting threads do:
// failed is done, and every batch not posted is named with its queue pair, its
// size and its first slice.
func TestVMPostThreadsReportFailedPosts(t *testing.T) {
	vmtest.Require(t)
	live := verbs.Live()
	fab, err := NewSender(fabric.DeviceConfig{Device: vmtest.Device0, Port: vmtest.Port}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fab.Close() }()
	ep, err := fab.Open(context.Background(), fabric.EndpointConfig{QPs: 2, SendDepth: 8, RecvDepth: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ep.Close() }()
	tp, ok := ep.(fabric.ThreadPoster)
	if !ok {
		t.Fatalf("the verbs endpoint %T has no posting threads of its own", ep)
	}
	lanes, err := tp.StartPostThreads([]int{0, 1}, 16, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer lanes.Stop()
	if _, ok := lanes.(*postThreads); !ok {
		t.Fatalf("the verbs endpoint posts from %T, want its own threads", lanes)
	}
	// The queue pairs were never connected: the kernel refuses their doorbells.
	write := func(sl uint32) fabric.SendWR {
		return fabric.SendWR{ID: uint64(sl), Op: fabric.OpWrite, Length: 4096, Imm: sl, RKey: 1, Signaled: true}
	}
	for _, b := range []struct {
		q   int
		wrs []fabric.SendWR
	}{{0, []fabric.SendWR{write(0), write(2)}}, {1, []fabric.SendWR{write(1)}}, {0, []fabric.SendWR{write(4)}}} {
		if err := lanes.Post(b.q, b.wrs); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-lanes.Failed().Done():
	case <-time.After(30 * time.Second):
		t.Fatal("no failed post reported")
	}
	lanes.Stop()
	got := lanes.TakeFailures()
	want := []struct {
		q, n int
		text string
	}{
		{0, 2, "post slices 0.. on queue pair 0: post send work request 0 of 2"},
		{0, 1, "post slices 4.. on queue pair 0: post send work request 0 of 2"},
		{1, 1, "post slices 1.. on queue pair 1: post send work request 0 of 1"},
	}
	if len(got) != len(want) {
		t.Fatalf("failures %+v, want %d", got, len(want))
	}
	for i, w := range want {
		f := got[i]
		if f.QP != w.q || f.N != w.n || !strings.Contains(f.Err.Error(), w.text) || !strings.Contains(f.Err.Error(), "invalid argument") {
			t.Errorf("failure %d: queue pair %d, %d work requests, %v; want %d, %d, %q ... invalid argument", i, f.QP, f.N, f.Err, w.q, w.n, w.text)
		}
	}
	if err := ep.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fab.Close(); err != nil {
		t.Fatal(err)
	}
	if now := verbs.Live(); now != live {
		t.Errorf("verbs objects after the test: %+v, before: %+v", now, live)
	}
}
