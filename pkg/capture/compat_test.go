package capture

import (
	"context"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/memfabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/pattern"
)

// A sender of the previous protocol version (7) is served as that version
// was: its preamble is accepted; in send mode it SENDs without waiting for
// receive grants and hears of none (a Posted, type 9, is a message a
// version-7 sender cannot decode); in write mode it takes credits as
// before. Every byte lands and Done confirms them.
func TestVersion7SenderIsServed(t *testing.T) {
	const nbufs, bufsz, msg, qps = 4, 8192, 2048, 2
	const total = 2*bufsz + 5*msg/2 // 2 blocks, then 2.5 slices: the last one short
	for _, mode := range []wire.Mode{wire.ModeSend, wire.ModeWrite} {
		t.Run(mode.String(), func(t *testing.T) {
			h := testRing(t, nbufs, bufsz)
			hs := startReceiver(t, h, ReceiverConfig{Mode: mode, QPs: qps, MsgBytes: msg, RxDepth: 16, StopObservations: 1}, wire.MRWholeRing)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			reads := readObservations(t, ctx, h, 1, 5, 0)
			ep := hs.net.Open(fabric.EndpointConfig{QPs: qps, SendDepth: 16, RecvDepth: 1}, make([]byte, total))
			t.Cleanup(func() { _ = ep.Close() })
			rs, m := dialRaw(t, hs, []byte("RCAP\x00\x07"), wire.Hello{Mode: mode, MsgBytes: msg, TotalBytes: total,
				Fabric: wire.Fabric{Transport: wire.TransportVerbs}, QPs: ep.Local()})
			acc, ok := m.(wire.Accept)
			if !ok {
				t.Fatalf("a version-7 sender's hello answered with %+v", m)
			}
			if err := ep.Connect(acc.QPs); err != nil {
				t.Fatal(err)
			}
			g := wire.Geometry{BlockBytes: bufsz, MsgBytes: msg, QPs: qps, NBufs: nbufs, WholeBlocks: mode == wire.ModeWrite}
			pattern.Fill(ep.Buffer(), 5, 0)
			v7 := &v7Sender{t: t, rs: rs, ep: ep, acc: acc, g: g, total: total}
			n := v7.stream()
			awaitSendCompletions(t, ep, n)
			if err := rs.k.Send(wire.End{Bytes: total, Complete: true}); err != nil {
				t.Fatal(err)
			}
			for {
				if d, ok := v7.recv().(wire.Done); ok {
					if !d.OK || d.Bytes != total {
						t.Fatalf("Done %+v, want %d bytes committed", d, total)
					}
					break
				}
			}
			waitOneObservation(t, hs, reads, total)
		})
	}
}

// v7Sender streams as a version-7 sender does.
type v7Sender struct {
	t       *testing.T
	rs      *rawSender
	ep      *memfabric.Endpoint
	acc     wire.Accept
	g       wire.Geometry
	total   uint64
	credits map[uint64]wire.Credit
}

// recv reads the receiver's next message, failing on one version 7 lacks.
func (v *v7Sender) recv() wire.Message {
	v.t.Helper()
	m, err := v.rs.k.Recv()
	if err != nil {
		v.t.Fatalf("read the receiver's messages: %v", err)
	}
	if p, ok := m.(wire.Posted); ok {
		v.t.Fatalf("the receiver sent a version-7 sender a receive grant %+v", p)
	}
	return m
}

// stream posts every slice and returns how many work requests it posted.
// Send mode: slice g on queue pair g mod 2 at once, its number as the
// immediate. Write mode: block b, once granted, on queue pair b mod 2,
// plain writes but the last, which carries the immediate.
func (v *v7Sender) stream() int {
	v.credits = map[uint64]wire.Credit{}
	n := v.g.Slices(v.total)
	for sl := range n {
		off := v.g.StreamOffset(sl)
		seq, boff, length := v.g.Slice(sl)
		wr := fabric.SendWR{ID: sl, Op: fabric.OpSendImm, Offset: off, Length: min(length, v.total-off), Imm: uint32(sl), Signaled: true}
		q := v.g.QP(sl)
		if v.g.WholeBlocks {
			addr, key, err := v.acc.BlockTarget(v.credit(seq).Index)
			if err != nil {
				v.t.Fatal(err)
			}
			wr.Op, wr.RemoteAddr, wr.RKey, q = fabric.OpWriteImm, addr+boff, key, int(seq%2)
			if sl+1 < n && v.g.SliceBlock(sl+1) == seq {
				wr.Op = fabric.OpWrite
			}
		}
		if err := v.ep.PostSend(q, []fabric.SendWR{wr}); err != nil {
			v.t.Fatal(err)
		}
	}
	return int(n)
}

// credit waits for the credit of stream block seq.
func (v *v7Sender) credit(seq uint64) wire.Credit {
	for {
		if c, ok := v.credits[seq]; ok {
			return c
		}
		if c, ok := v.recv().(wire.Credit); ok {
			v.credits[c.Seq] = c
		}
	}
}
