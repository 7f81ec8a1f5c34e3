package capture

import (
	"context"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/pattern"
)

// A sender of the previous protocol version (7) is served as that version
// was: its preamble is accepted, and in send mode it SENDs without waiting
// for receive grants and hears of none (a Posted, type 9, is a message a
// version-7 sender cannot decode); every byte lands and Done confirms them.
func TestVersion7SenderIsServed(t *testing.T) {
	const nbufs, bufsz, msg, qps = 4, 8192, 2048, 2
	const total = 2*bufsz + 5*msg/2 // 2 blocks, then 2.5 slices: the last one short
	h := testRing(t, nbufs, bufsz)
	hs := startReceiver(t, h, ReceiverConfig{Mode: wire.ModeSend, QPs: qps, MsgBytes: msg, RxDepth: 16, StopObservations: 1}, wire.MRWholeRing)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reads := readObservations(t, ctx, h, 1, 5, 0)

	ep := hs.net.Open(fabric.EndpointConfig{QPs: qps, SendDepth: 16, RecvDepth: 1}, make([]byte, total))
	t.Cleanup(func() { _ = ep.Close() })
	rs, m := dialRaw(t, hs, []byte("RCAP\x00\x07"), wire.Hello{Mode: wire.ModeSend, MsgBytes: msg, TotalBytes: total,
		Fabric: wire.Fabric{Transport: wire.TransportVerbs}, QPs: ep.Local()})
	acc, ok := m.(wire.Accept)
	if !ok {
		t.Fatalf("a version-7 sender's hello answered with %+v", m)
	}
	if err := ep.Connect(acc.QPs); err != nil {
		t.Fatal(err)
	}
	// Version 7: every slice goes out at once, on queue pair g mod 2, with
	// the slice number as its immediate.
	g := wire.Geometry{BlockBytes: bufsz, MsgBytes: msg, QPs: qps, NBufs: nbufs}
	n := g.Slices(total)
	pattern.Fill(ep.Buffer(), 5, 0)
	for sl := range n {
		off := g.StreamOffset(sl)
		_, _, length := g.Slice(sl)
		wr := fabric.SendWR{ID: sl, Op: fabric.OpSendImm, Offset: off, Length: min(length, total-off), Imm: uint32(sl), Signaled: true}
		if err := ep.PostSend(g.QP(sl), []fabric.SendWR{wr}); err != nil {
			t.Fatal(err)
		}
	}
	awaitSendCompletions(t, ep, int(n))
	if err := rs.k.Send(wire.End{Bytes: total, Complete: true}); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := rs.k.Recv()
		if err != nil {
			t.Fatalf("waiting for Done: %v", err)
		}
		if p, ok := m.(wire.Posted); ok {
			t.Fatalf("the receiver sent a version-7 sender a receive grant %+v", p)
		}
		if d, ok := m.(wire.Done); ok {
			if !d.OK || d.Bytes != total {
				t.Fatalf("Done %+v, want %d bytes committed", d, total)
			}
			break
		}
	}
	waitOneObservation(t, hs, reads, total)
}
