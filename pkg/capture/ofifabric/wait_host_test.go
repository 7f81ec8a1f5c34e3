//go:build linux && cgo

package ofifabric

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/rdma/ofi"
)

// pollWaitResult is what a PollWait returned.
type pollWaitResult struct {
	wcs []fabric.Completion
	ok  bool
	err error
}

// sleepingPollWait starts PollWait on sep in a goroutine and returns once it
// has found nothing ready and gone to sleep on the wait fds (a minute at
// most: a hang guard, not a speed check).
func sleepingPollWait(t *testing.T, ctx context.Context, sep *endpoint) <-chan pollWaitResult {
	t.Helper()
	if sep.set == nil {
		t.Fatalf("the sender's endpoint has no wait fds: %s", sep.noWait)
	}
	before := sep.set.sleeps.Load()
	out := make(chan pollWaitResult, 1)
	go func() {
		wcs := make([]fabric.Completion, 8)
		n, ok, err := sep.PollWait(ctx, wcs)
		out <- pollWaitResult{wcs: wcs[:n], ok: ok, err: err}
	}()
	for guard := time.Now().Add(time.Minute); sep.set.sleeps.Load() == before; time.Sleep(time.Millisecond) {
		if time.Now().After(guard) {
			t.Fatal("PollWait did not go to sleep within a minute")
		}
	}
	return out
}

// awaitResult waits for a PollWait's result (a minute at most: a hang guard).
func awaitResult(t *testing.T, out <-chan pollWaitResult, what string) pollWaitResult {
	t.Helper()
	select {
	case r := <-out:
		return r
	case <-time.After(time.Minute):
		t.Fatalf("%s: PollWait still asleep after a minute", what)
	}
	return pollWaitResult{}
}

// A sender's PollWait sleeps while nothing is there and returns the
// completions of writes posted meanwhile: first of a write on the last
// endpoint alone (the wait covers every endpoint's completion queue), then
// of one on each of the others. Woken, it polls, so it may return before
// all have completed: the test calls it until every write came back.
func TestPollWaitReturnsPostedWrites(t *testing.T) {
	for _, qps := range []int{1, 4} {
		t.Run(map[int]string{1: "one endpoint", 4: "four endpoints"}[qps], func(t *testing.T) {
			rep, sep, ring, regions, s := pair(t, qps, 4)
			received, _ := drive(t, rep, qps)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard, not a speed check
			defer cancel()
			post := func(q int) {
				copy(s.Buffer()[q*8192:], "landed")
				if err := sep.PostSend(q, []fabric.SendWR{write(q, uint64(100+q), uint32(q), 6, regions)}); err != nil {
					t.Fatal(err)
				}
			}
			asleep := sleepingPollWait(t, ctx, sep)
			post(qps - 1)
			got := pollWaitFor(t, ctx, sep, awaitResult(t, asleep, "a write posted while it slept"), 1)
			if qps > 1 {
				asleep = sleepingPollWait(t, ctx, sep)
				for q := range qps - 1 {
					post(q)
				}
				got = append(got, pollWaitFor(t, ctx, sep, awaitResult(t, asleep, "writes posted while it slept"), qps-1)...)
			}
			seen := map[int]bool{}
			for _, c := range got {
				if c.Err != nil || c.Recv || c.ID != uint64(100+c.QP) || seen[c.QP] {
					t.Errorf("completion %+v", c)
				}
				seen[c.QP] = true
			}
			if len(got) != qps || (len(got) > 0 && got[0].QP != qps-1) {
				t.Errorf("%d completions for %d writes, the last endpoint's first: %+v", len(got), qps, got)
			}
			if rc := received(); len(rc) != qps {
				t.Errorf("the receiver got %d completions for %d writes: %+v", len(rc), qps, rc)
			}
			for q := range qps {
				if string(ring.Block(q)[:6]) != "landed" {
					t.Errorf("ring block %d: %q", q, ring.Block(q)[:6])
				}
			}
		})
	}
}

// pollWaitFor returns r's completions and those of further PollWaits until
// want came.
func pollWaitFor(t *testing.T, ctx context.Context, sep *endpoint, r pollWaitResult, want int) []fabric.Completion {
	t.Helper()
	got := r.wcs
	for len(got) < want && r.ok && r.err == nil {
		wcs := make([]fabric.Completion, 8)
		var n int
		n, r.ok, r.err = sep.PollWait(ctx, wcs)
		got = append(got, wcs[:n]...)
	}
	if !r.ok || r.err != nil {
		t.Fatalf("PollWait: ok %v, %v", r.ok, r.err)
	}
	return got
}

// A PollWait with nothing in flight sleeps until its context is cancelled,
// and then returns the context's error.
func TestPollWaitWokenByCancel(t *testing.T) {
	_, sep, _, _, _ := pair(t, 2, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := sleepingPollWait(t, ctx, sep)
	cancel()
	r := awaitResult(t, out, "cancelled")
	if !r.ok || !errors.Is(r.err, context.Canceled) || len(r.wcs) != 0 {
		t.Fatalf("PollWait after cancel: ok %v, %d completions, %v", r.ok, len(r.wcs), r.err)
	}
	// The cancellation left nothing behind: the next PollWait sleeps too and
	// wakes for its own context.
	ctx2, cancel2 := context.WithCancel(context.Background())
	out = sleepingPollWait(t, ctx2, sep)
	cancel2()
	if r := awaitResult(t, out, "cancelled again"); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("second PollWait after cancel: %v", r.err)
	}
}

// Close wakes a sleeping PollWait, which returns the closed error; every
// libfabric object is gone afterwards (and goleak checks the goroutines).
func TestCloseWakesPollWait(t *testing.T) {
	before := ofi.Live()
	t.Cleanup(func() { // registered first, so it runs after pair's cleanups closed the rest
		if got := ofi.Live(); got != before {
			t.Errorf("after Close: %+v, before %+v", got, before)
		}
	})
	_, sep, _, _, _ := pair(t, 3, 4)
	out := sleepingPollWait(t, context.Background(), sep)
	if err := sep.Close(); err != nil {
		t.Fatal(err)
	}
	r := awaitResult(t, out, "closed")
	if !r.ok || !errors.Is(r.err, errClosed) {
		t.Fatalf("PollWait after Close: ok %v, %v", r.ok, r.err)
	}
	if _, ok, err := sep.PollWait(context.Background(), make([]fabric.Completion, 1)); !ok || !errors.Is(err, errClosed) {
		t.Fatalf("PollWait on a closed endpoint: ok %v, %v", ok, err)
	}
	if err := sep.Close(); err != nil {
		t.Fatal(err)
	}
}

// Where the provider gives no wait fds (shm), PollWait says it cannot wait
// and the sender says once, not per endpoint, that it polls.
func TestNoWaitFDsFallBackToPolling(t *testing.T) {
	var logged bytes.Buffer
	s, err := NewSender(Config{Provider: "shm", Mode: wire.ModeSend, Log: slog.New(slog.NewTextHandler(&logged, nil))}, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	for range 2 {
		ep, err := s.Open(context.Background(), fabric.EndpointConfig{QPs: 2, SendDepth: 4, RecvDepth: 1})
		if err != nil {
			t.Fatal(err)
		}
		if n, ok, err := ep.(fabric.Waiter).PollWait(context.Background(), make([]fabric.Completion, 1)); ok || n != 0 || err != nil {
			t.Errorf("PollWait over shm: %d, ok %v, %v", n, ok, err)
		}
		if err := ep.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(logged.String(), "have no wait fds"); n != 1 || !strings.Contains(logged.String(), "completion queue 0 has no wait fd") {
		t.Errorf("logged %d times: %q", n, logged.String())
	}
}
