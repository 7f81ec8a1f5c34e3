package benchfabric

import (
	"context"
	"testing"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/rdma/verbs"
)

// The benchmark fabric must report completions as a NIC would, or the engine
// under benchmark would fail (or take other paths) instead of streaming.

func TestSendModeCompletesEveryPostedReceive(t *testing.T) {
	f := NewReceiver(wire.ModeSend, 4, 1<<20, 64<<10)
	ep, err := f.Open(context.Background(), fabric.EndpointConfig{QPs: 2, RecvDepth: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ep.Close() }()
	if err := ep.PostRecv(0, []fabric.RecvWR{{ID: 0, Length: 65536}, {ID: 2, Block: 0, Offset: 131072, Length: 65536}}); err != nil {
		t.Fatal(err)
	}
	if err := ep.PostRecv(1, []fabric.RecvWR{{ID: 1, Offset: 65536, Length: 100}}); err != nil {
		t.Fatal(err)
	}
	wcs := make([]fabric.Completion, 8)
	n, err := ep.Poll(wcs)
	if err != nil {
		t.Fatal(err)
	}
	want := []fabric.Completion{
		{ID: 0, QP: 0, Recv: true, Bytes: 65536, Imm: 0},
		{ID: 1, QP: 1, Recv: true, Bytes: 100, Imm: 1},
		{ID: 2, QP: 0, Recv: true, Bytes: 65536, Imm: 2},
	}
	if n != len(want) {
		t.Fatalf("%d completions, want %d: %+v", n, len(want), wcs[:n])
	}
	for i := range want {
		if wcs[i] != want[i] {
			t.Errorf("completion %d: %+v, want %+v", i, wcs[i], want[i])
		}
	}
	if n, _ := ep.Poll(wcs); n != 0 {
		t.Errorf("%d completions with nothing posted", n)
	}
}

func TestWriteModeCompletesGrantedBlocksOnly(t *testing.T) {
	// 1 MiB blocks of 256 KiB slices: block k's immediate names slice 4k+3.
	f := NewReceiver(wire.ModeWrite, 4, 1<<20, 256<<10)
	ep, err := f.Open(context.Background(), fabric.EndpointConfig{QPs: 2, RecvDepth: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ep.Close() }()
	for q := range 2 {
		if err := ep.PostRecv(q, []fabric.RecvWR{{ID: uint64(q)}, {ID: uint64(q)}}); err != nil {
			t.Fatal(err)
		}
	}
	wcs := make([]fabric.Completion, 8)
	if n, _ := ep.Poll(wcs); n != 0 {
		t.Fatalf("%d completions before a grant", n)
	}
	f.Grant(0)
	f.Grant(1)
	f.Grant(2)
	n, _ := ep.Poll(wcs)
	want := []fabric.Completion{
		{ID: 0, QP: 0, Recv: true, Bytes: 256 << 10, Imm: 3},
		{ID: 1, QP: 1, Recv: true, Bytes: 256 << 10, Imm: 7},
		{ID: 0, QP: 0, Recv: true, Bytes: 256 << 10, Imm: 11},
	}
	if n != len(want) {
		t.Fatalf("%d completions, want %d: %+v", n, len(want), wcs[:n])
	}
	for i := range want {
		if wcs[i] != want[i] {
			t.Errorf("completion %d: %+v, want %+v", i, wcs[i], want[i])
		}
	}
	// Block 3 goes on queue pair 1, which has a receive left; block 4 on queue
	// pair 0, which has none: it waits for a repost.
	f.Grant(3)
	f.Grant(4)
	if n, _ := ep.Poll(wcs); n != 1 || wcs[0].Imm != 15 {
		t.Fatalf("after grants 3 and 4: %+v", wcs[:n])
	}
	if err := ep.PostRecv(0, []fabric.RecvWR{{ID: 0}}); err != nil {
		t.Fatal(err)
	}
	if n, _ := ep.Poll(wcs); n != 1 || wcs[0].Imm != 19 || wcs[0].QP != 0 {
		t.Fatalf("after the repost: %+v", wcs[:n])
	}
}

func TestSenderCompletesSignalledSendsAndCountsImmediates(t *testing.T) {
	f := NewSender(make([]byte, 1024))
	ep, err := f.Open(context.Background(), fabric.EndpointConfig{QPs: 2, SendDepth: 4})
	if err != nil {
		t.Fatal(err)
	}
	wrs := []fabric.SendWR{
		{ID: 1, Op: fabric.OpWrite},
		{ID: 2, Op: fabric.OpWriteImm, Signaled: true},
		{ID: 3, Op: fabric.OpSendImm},
	}
	if err := ep.PostSend(1, wrs); err != nil {
		t.Fatal(err)
	}
	wcs := make([]fabric.Completion, 8)
	n, _ := ep.Poll(wcs)
	if n != 1 || wcs[0] != (fabric.Completion{ID: 2, QP: 1}) {
		t.Fatalf("completions %+v, want the signalled WR's alone", wcs[:n])
	}
	if f.WriteImms() != 1 {
		t.Errorf("WriteImms %d, want 1", f.WriteImms())
	}
	select {
	case <-f.Landed():
	default:
		t.Error("no Landed notification")
	}
	if err := ep.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ep.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if ep.PostSend(0, wrs) == nil {
		t.Error("PostSend on a closed endpoint succeeded")
	}
}

// The fabric crosses into C (verbs.Noop) as the verbs adapter does: once per
// completion queue polled, in turn until the completions asked for are
// full, and once per 256 work requests posted.
func TestCrossingsAsTheVerbsAdapter(t *testing.T) {
	verbs.Noop()
	if verbs.Crossings() == 0 {
		t.Skip("built without cgo: no crossings to count")
	}
	wrs := func(q, n int) []fabric.RecvWR {
		out := make([]fabric.RecvWR, n)
		for i := range out {
			out[i] = fabric.RecvWR{ID: uint64(q + 2*i), Length: 4096}
		}
		return out
	}
	for _, c := range []struct {
		name    string
		cqPerQP bool
		polls   []int // completions each poll returns
		want    uint64
	}{
		// Posts: 300 WRs (2 crossings) on queue pair 0, 10 (1) on 1.
		{"shared-cq", false, []int{64, 64, 64, 64, 54, 0}, 3 + 6},
		// Poll 1 fills 64 from queue pair 0's CQ alone (1 crossing); poll 2
		// takes queue pair 1's 10 and 54 of 0's (2); every later poll
		// visits 1's empty CQ, then 0's (2 each).
		{"cq-per-qp", true, []int{64, 64, 64, 64, 54, 0}, 3 + 1 + 2*5},
	} {
		t.Run(c.name, func(t *testing.T) {
			ep, err := NewReceiver(wire.ModeSend, 4, 4<<20, 4096).Open(context.Background(),
				fabric.EndpointConfig{QPs: 2, RecvDepth: 512, CQPerQP: c.cqPerQP})
			if err != nil {
				t.Fatal(err)
			}
			before := verbs.Crossings()
			if err := ep.PostRecv(0, wrs(0, 300)); err != nil {
				t.Fatal(err)
			}
			if err := ep.PostRecv(1, wrs(1, 10)); err != nil {
				t.Fatal(err)
			}
			wcs := make([]fabric.Completion, 64)
			for i, want := range c.polls {
				if n, _ := ep.Poll(wcs); n != want {
					t.Fatalf("poll %d: %d completions, want %d", i, n, want)
				}
			}
			if got := verbs.Crossings() - before; got != c.want {
				t.Errorf("%d crossings, want %d", got, c.want)
			}
		})
	}
}
