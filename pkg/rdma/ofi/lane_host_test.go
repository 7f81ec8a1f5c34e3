//go:build linux && cgo

package ofi

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// Lanes write a seeded pattern from two endpoints, each on a thread of its own, into a
// target: every byte lands, every operation completes once with its ID, and Wait wakes for
// the completions.
func TestLanesPostAndReadTheirEndpoints(t *testing.T) {
	for _, p := range providers {
		if p.hints.DeliveryComplete {
			continue
		}
		t.Run(p.name, func(t *testing.T) {
			checkNoLeaks(t)
			lanesWriteAPattern(t, p.hints)
		})
	}
}

func lanesWriteAPattern(t *testing.T, h Hints) {
	const eps, writes, chunk = 2, 64, 8 << 10
	target := openSide(t, h, false)
	region := mmapped(t, eps*writes*chunk)
	rmr := register(t, target.d, region, CapRemoteWrite|CapRecv)
	want := make([]byte, len(region))
	fill(want, 11)
	src := mmapped(t, len(region))
	copy(src, want)
	w := openSideFD(t, h)
	smr := register(t, w.d, src, CapWrite)
	// A second endpoint on the writer's domain, with its own CQ.
	w2 := &side{d: w.d}
	var err error
	if w2.av, err = w.d.OpenAV(1); err != nil {
		t.Fatal(err)
	}
	if w2.cq, err = w.d.OpenCQ(CQConfig{Size: 256, WaitFD: true}); err != nil {
		t.Fatal(err)
	}
	if w2.ep, err = w.d.OpenEndpoint(EndpointConfig{AV: w2.av, TxCQ: w2.cq, RxCQ: w2.cq}); err != nil {
		t.Fatal(err)
	}
	peers := []Addr{w.insert(t, target), w2.insert(t, target)}
	if target.d.Info().Mode&ModeRxCQData != 0 {
		for i := range eps {
			post(t, func() error { return target.ep.Recv(Local{MR: rmr, Addr: rmr.Addr()}, uint64(1000+i)) }, target)
		}
	}
	ls, err := w.d.StartLanes([]LaneConfig{
		{CPU: -1, Endpoints: []*Endpoint{w.ep}, CQs: []*CQ{w.cq}},
		{CPU: -1, Endpoints: []*Endpoint{w2.ep}, CQs: []*CQ{w2.cq}},
	}, 2*writes)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	for l := range eps {
		var ops []Op
		for k := range writes {
			off := uint64((l*writes + k) * chunk)
			o := Op{Kind: OpWrite, Local: smr.Local(off, chunk), Peer: peers[l], Remote: Remote{Addr: rmr.RemoteAddr(off), Key: rmr.Key()}, ID: uint64(l<<16 | k)}
			if k == writes-1 {
				o.HasData, o.Data = true, uint64(l)
			}
			ops = append(ops, o)
		}
		// Two batches per lane: the second names its work requests apart.
		if err := ls.Post(l, 0, l, writes/2, ops[:writes/2]); err != nil {
			t.Fatal(err)
		}
		if err := ls.Post(l, 0, l, writes/2, ops[writes/2:]); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[uint64]int{}
	buf := make([]LaneCompletion, 16)
	g := newHangGuard()
	for len(seen) < eps*writes {
		took := 0
		for l := range eps {
			n, failed, err := ls.Take(l, buf)
			if err != nil || failed {
				t.Fatalf("take from lane %d: failed=%v %v", l, failed, err)
			}
			for _, c := range buf[:n] {
				if c.Err != nil || c.Ep != 0 || c.Flags&CapWrite == 0 {
					t.Errorf("lane %d: completion %+v", l, c)
				}
				seen[c.ID]++
			}
			took += n
		}
		target.poll(t) // the target's side of the protocol progresses as it reads
		if took == 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			if err := ls.Wait(ctx); err != nil && ctx.Err() == nil {
				t.Fatal(err)
			}
			cancel()
		}
		g.check(t, "lanes' completions")
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("operation %#x completed %d times", id, n)
		}
	}
	collect(t, target, eps)
	if !bytes.Equal(region, want) {
		t.Error("the target region differs from the seeded pattern written")
	}
	if f := ls.Stop(); len(f) != 0 {
		t.Errorf("failures: %+v", f)
	}
	ls.Close()
	if err := ls.Post(0, 0, 0, 1, []Op{{Kind: OpWrite}}); err == nil {
		t.Error("Post after Stop was taken")
	}
	for _, s := range []*side{w2} {
		if err := s.ep.Close(); err != nil {
			t.Error(err)
		}
	}
}

// What a lane cannot post is refused when it is handed over, naming why; a set with
// nothing to run is refused at the start.
func TestLanesRefuseWhatTheyCannotPost(t *testing.T) {
	checkNoLeaks(t)
	s := openSideFD(t, providers[0].hints)
	buf := mmapped(t, 64)
	mr := register(t, s.d, buf, CapSend)
	if _, err := s.d.StartLanes(nil, 8); err == nil {
		t.Error("a set of no lanes started")
	}
	if _, err := s.d.StartLanes([]LaneConfig{{CPU: -1, Endpoints: []*Endpoint{s.ep}}}, 8); err == nil {
		t.Error("a lane without completion queues started")
	}
	ls, err := s.d.StartLanes([]LaneConfig{{CPU: -1, Endpoints: []*Endpoint{s.ep}, CQs: []*CQ{s.cq}}}, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	outside := Local{Addr: mr.Addr() + 32, Len: 64, MR: mr}
	if err := ls.Post(0, 0, 0, 1, []Op{{Kind: OpSend, Local: outside}}); err == nil || !strings.Contains(err.Error(), "fi_sendmsg") {
		t.Errorf("memory outside its region: %v", err)
	}
	if err := ls.Post(0, 1, 0, 1, []Op{{Kind: OpSend, Local: mr.Local(0, 8)}}); err == nil || !strings.Contains(err.Error(), "no such endpoint") {
		t.Errorf("an endpoint the lane does not have: %v", err)
	}
	many := make([]Op, 5)
	for i := range many {
		many[i] = Op{Kind: OpSend, Local: mr.Local(0, 8)}
	}
	if err := ls.Post(0, 0, 0, 5, many); err == nil || !strings.Contains(err.Error(), "full") {
		t.Errorf("more than the queue holds: %v", err)
	}
}

// openSideFD is openSide with a completion queue that has a wait fd where the provider
// gives one (a lane sleeps on it).
func openSideFD(t *testing.T, h Hints) *side {
	t.Helper()
	return openSideCQ(t, h, CQConfig{Size: 256, WaitFD: true}, false)
}
