//go:build linux && cgo

package ofifabric

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

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

// pair is a receiver's and a sender's endpoints of qps endpoints each over
// tcp;ofi_rxm in write mode, connected, and the receiver's ring (a block per
// endpoint); everything closes at the end of the test.
func pair(t testing.TB, qps, depth int) (rep, sep *endpoint, ring *mmapRing, regions []wire.Region, s *Sender) {
	t.Helper()
	return pairOver(t, tcp, qps, depth)
}

// pairOver is pair over cfg (with its LengthMessages).
func pairOver(t testing.TB, cfg Config, qps, depth int) (rep, sep *endpoint, ring *mmapRing, regions []wire.Region, s *Sender) {
	t.Helper()
	ring = newRing(t, qps, 8192)
	cfg.Mode = wire.ModeWrite
	r, err := NewReceiver(cfg, ring, fabric.MRAuto, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	if s, err = NewSender(cfg, uint64(qps)*8192); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	re, err := r.Open(context.Background(), fabric.EndpointConfig{QPs: qps, SendDepth: 1, RecvDepth: depth})
	if err != nil {
		t.Fatal(err)
	}
	se, err := s.Open(context.Background(), fabric.EndpointConfig{QPs: qps, SendDepth: depth, RecvDepth: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = errors.Join(re.Close(), se.Close()) })
	if err := errors.Join(re.Connect(se.Local()), se.Connect(re.Local())); err != nil {
		t.Fatal(err)
	}
	_, regions, _ = r.Registration()
	return re.(*endpoint), se.(*endpoint), ring, regions, s
}

// write is a signalled write of n bytes from endpoint q's block of the send
// buffer into block q of the ring, with immediate imm.
func write(q int, id uint64, imm uint32, n uint64, regions []wire.Region) fabric.SendWR {
	return fabric.SendWR{ID: id, Op: fabric.OpWriteImm, Offset: uint64(q) * 8192, Length: n, Imm: imm, Signaled: true,
		RemoteAddr: regions[0].Addr + uint64(q)*8192, RKey: regions[0].RKey}
}

// pollUntil polls ep until want completions came, or stop is closed (a
// minute at most: a hang guard, not a speed check).
func pollUntil(t testing.TB, ep fabric.Endpoint, want int, stop <-chan struct{}) []fabric.Completion {
	wcs := make([]fabric.Completion, 8)
	var got []fabric.Completion
	for guard := time.Now().Add(time.Minute); len(got) < want && time.Now().Before(guard); {
		select {
		case <-stop:
			return got
		default:
		}
		k, err := ep.Poll(wcs)
		if err != nil {
			t.Error(err)
			return got
		}
		got = append(got, wcs[:k]...)
	}
	return got
}

// drive polls the receiver's endpoint from a goroutine of its own, as the
// receiver's loop would (tcp;ofi_rxm progresses a side only while its
// completion queues are read), until want completions came or stop is
// called; wait waits for that and returns them.
func drive(t testing.TB, rep fabric.Endpoint, want int) (wait func() []fabric.Completion, stop func()) {
	quit := make(chan struct{})
	out := make(chan []fabric.Completion, 1)
	go func() { out <- pollUntil(t, rep, want, quit) }()
	var stopOnce, waitOnce sync.Once
	var got []fabric.Completion
	stop = func() { stopOnce.Do(func() { close(quit) }) }
	wait = func() []fabric.Completion {
		waitOnce.Do(func() { got = <-out })
		return got
	}
	return wait, stop
}

// Over a domain whose threading model allows it (tcp;ofi_rxm: FI_THREAD_SAFE)
// every endpoint has a lock of its own: while one endpoint's lock is held (a
// post in progress), the others post and complete, and Poll returns their
// completions instead of waiting for it.
func TestEndpointsDoNotWaitForEachOther(t *testing.T) {
	rep, sep, ring, regions, s := pair(t, 3, 4)
	if th := s.Info().Threading; !th.PerEndpoint() || len(sep.locks) != 3 || len(rep.locks) != 3 {
		t.Fatalf("threading %v: %d sender locks, %d receiver locks for 3 endpoints", th, len(sep.locks), len(rep.locks))
	}
	copy(s.Buffer()[8192:], "second")
	copy(s.Buffer()[2*8192:], "third")
	received, _ := drive(t, rep, 2)
	sep.qps[0].mu.Lock() // a post on endpoint 0 that has not returned
	done := make(chan []fabric.Completion, 1)
	go func() {
		for q := 1; q < 3; q++ {
			if err := sep.PostSend(q, []fabric.SendWR{write(q, uint64(10+q), uint32(q), 6, regions)}); err != nil {
				t.Error(err)
			}
		}
		done <- pollUntil(t, sep, 2, nil)
	}()
	var sent []fabric.Completion
	select {
	case sent = <-done:
		sep.qps[0].mu.Unlock()
	case <-time.After(2 * time.Minute): // a hang guard, not a speed check
		t.Fatal("posts and polls on endpoints 1 and 2 waited for endpoint 0's lock") // and Close would wait for it too
	}
	got := received()
	if len(sent) != 2 || len(got) != 2 {
		t.Fatalf("sender completions %+v, receiver completions %+v", sent, got)
	}
	for _, c := range append(sent, got...) {
		if c.Err != nil || c.QP < 1 || (!c.Recv && c.ID != uint64(10+c.QP)) || (c.Recv && (c.Imm != uint32(c.QP) || c.Bytes != 6)) {
			t.Errorf("completion %+v", c)
		}
	}
	if string(ring.Block(1)[:6]) != "second" || string(ring.Block(2)[:5]) != "third" {
		t.Errorf("ring blocks %q %q", ring.Block(1)[:6], ring.Block(2)[:5])
	}
}

// Posting goroutines, one per endpoint, post at once while another goroutine
// polls (the sender's posting threads and its loop): every write lands and
// completes once, on its endpoint, in order; also with length messages,
// whose words the endpoints share a region of. Run with -race.
func TestParallelPostsAndPolls(t *testing.T) {
	for _, lenMsg := range []bool{false, true} {
		t.Run(fmt.Sprintf("length-messages=%v", lenMsg), func(t *testing.T) {
			cfg := tcp
			cfg.LengthMessages = lenMsg
			parallelPostsAndPolls(t, cfg)
		})
	}
}

func parallelPostsAndPolls(t *testing.T, cfg Config) {
	const qps, per = 4, 64
	rep, sep, _, regions, _ := pairOver(t, cfg, qps, per)
	if cfg.LengthMessages { // a receive for each length message
		for q := range qps {
			wrs := make([]fabric.RecvWR, per)
			for i := range wrs {
				wrs[i].ID = uint64(1000 + i)
			}
			if err := rep.PostRecv(q, wrs); err != nil {
				t.Fatal(err)
			}
		}
	}
	received, _ := drive(t, rep, qps*per)
	var wg sync.WaitGroup
	for q := range qps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				if err := sep.PostSend(q, []fabric.SendWR{write(q, uint64(q)<<32|uint64(i), uint32(q*per+i), 64, regions)}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	sent := pollUntil(t, sep, qps*per, nil)
	wg.Wait()
	got := received()
	next := make([]int, qps)
	for _, c := range sent {
		if c.Err != nil || c.Recv || c.ID != uint64(c.QP)<<32|uint64(next[c.QP]) {
			t.Fatalf("send completion %+v, want ID %d on endpoint %d", c, next[c.QP], c.QP)
		}
		next[c.QP]++
	}
	imms := map[uint32]bool{}
	for _, c := range got {
		if c.Err != nil || !c.Recv || c.Bytes != 64 || int(c.Imm)/per != c.QP || imms[c.Imm] {
			t.Fatalf("receive completion %+v", c)
		}
		imms[c.Imm] = true
	}
	if len(sent) != qps*per || len(imms) != qps*per {
		t.Fatalf("%d send and %d receive completions, want %d", len(sent), len(imms), qps*per)
	}
}

// Close waits for a post in progress and makes every later one fail, while a
// goroutine keeps posting; it closes every libfabric object and may be
// called again.
func TestCloseWhilePosting(t *testing.T) {
	before := ofi.Live()
	t.Cleanup(func() { // after pair's
		if got := ofi.Live(); got != before {
			t.Errorf("after Close: %+v, before %+v", got, before)
		}
	})
	rep, sep, _, regions, _ := pair(t, 2, 4)
	received, stop := drive(t, rep, math.MaxInt)
	defer func() { stop(); received() }()
	first := make(chan struct{})
	failed := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			err := sep.PostSend(1, []fabric.SendWR{write(1, uint64(i), 1, 8, regions)})
			if i == 0 {
				close(first)
			}
			if err != nil {
				failed <- err
				return
			}
			if i%4 == 3 { // take completions now and then, as the sender's loop would
				if _, err := sep.Poll(make([]fabric.Completion, 8)); err != nil {
					failed <- err
					return
				}
			}
		}
	}()
	<-first
	if err := errors.Join(sep.Close(), sep.Close()); err != nil {
		t.Fatal(err)
	}
	if err := <-failed; !errors.Is(err, errClosed) {
		t.Errorf("a post after Close: %v", err)
	}
	if n, err := sep.Poll(make([]fabric.Completion, 4)); err != nil {
		t.Errorf("Poll after Close: %d, %v", n, err)
	}
}
