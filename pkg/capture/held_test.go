package capture

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/testio"
	"github.com/ringcap/ringcap/pkg/capture/memfabric"
	"github.com/ringcap/ringcap/pkg/capture/sender"
	"github.com/ringcap/ringcap/pkg/capture/status"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/dada"
)

func TestHoldReporterDue(t *testing.T) {
	t0 := time.Unix(1000, 0)
	held := func(total time.Duration) status.HoldState {
		return status.HoldState{Holding: true, Current: total, Total: total}
	}
	free := func(total time.Duration) status.HoldState { return status.HoldState{Total: total} }
	cases := []struct {
		name string
		sent *status.HoldState // the last report, at t0 (nil: none)
		at   time.Duration
		s    status.HoldState
		want bool
	}{
		{"nothing ever held", nil, time.Hour, free(0), false},
		{"a hold begins, first report", nil, 0, held(0), true},
		{"a hold goes on, soon after its report", &status.HoldState{Holding: true}, heldReportEvery / 2, held(time.Second), false},
		{"a hold goes on, a report later", &status.HoldState{Holding: true}, heldReportEvery, held(time.Second), true},
		{"the reported hold ends at once", &status.HoldState{Holding: true}, time.Microsecond, free(time.Second), true},
		{"short holds the sender was not told of, soon after", &status.HoldState{Total: time.Second}, time.Millisecond, free(2 * time.Second), false},
		{"short holds the sender was not told of, later", &status.HoldState{Total: time.Second}, heldReportEvery, free(2 * time.Second), true},
		{"nothing new", &status.HoldState{Total: time.Second}, time.Hour, free(time.Second), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r holdReporter
			if c.sent != nil {
				r.message(t0, *c.sent)
			}
			if got := r.due(t0.Add(c.at), c.s); got != c.want {
				t.Fatalf("due = %v, want %v", got, c.want)
			}
		})
	}
}

// holdingReader reads one observation, keeping its first block until release
// is closed; held is closed once it has the block. It sends the bytes it read.
func holdingReader(t *testing.T, ctx context.Context, h *dada.HDU, release <-chan struct{}) (held <-chan struct{}, bytes <-chan uint64) {
	hc, out := make(chan struct{}), make(chan uint64, 1)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		var n uint64
		defer func() { out <- n }()
		fail := func(what string, err error) {
			if ctx.Err() == nil {
				t.Errorf("%s: %v", what, err)
			}
		}
		r, err := h.LockRead(ctx)
		if err != nil {
			fail("lock read", err)
			return
		}
		defer func() { _ = r.Close() }()
		if _, err := r.ReadHeader(ctx); err != nil {
			fail("read header", err)
			return
		}
		for first := true; ; first = false {
			b, err := r.NextBlock(ctx)
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				fail("read block", err)
				return
			}
			n += uint64(len(b.Data))
			if first {
				close(hc)
				select {
				case <-release:
				case <-ctx.Done():
					return
				}
			}
			if err := r.MarkCleared(); err != nil {
				fail("clear block", err)
				return
			}
		}
	}()
	return hc, out
}

// progressLog keeps a sender's progress reports.
type progressLog struct {
	mu   sync.Mutex
	cond *sync.Cond
	all  []sender.Progress
}

func newProgressLog() *progressLog {
	l := &progressLog{}
	l.cond = sync.NewCond(&l.mu)
	return l
}

func (l *progressLog) add(p sender.Progress) {
	l.mu.Lock()
	l.all = append(l.all, p)
	l.mu.Unlock()
	l.cond.Broadcast()
}

// len is the number of reports so far.
func (l *progressLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.all)
}

// await waits for a report after the first `from` that, with the one before
// it, satisfies ok and returns both; ctx bounds the wait.
func (l *progressLog) await(ctx context.Context, from int, ok func(prev, p sender.Progress) bool) (prev, p sender.Progress, err error) {
	stop := context.AfterFunc(ctx, l.cond.Broadcast)
	defer stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := max(from, 1); ; i++ {
		for i >= len(l.all) {
			if ctx.Err() != nil {
				return sender.Progress{}, sender.Progress{}, ctx.Err()
			}
			l.cond.Wait()
		}
		if ok(l.all[i-1], l.all[i]) {
			return l.all[i-1], l.all[i], nil
		}
	}
}

func getStatus(t *testing.T, url string) statusdoc.Status {
	t.Helper()
	resp, err := http.Get(url + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var st statusdoc.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("decode /status: %v", err)
	}
	return st
}

// A receiver whose reader keeps a block says so while it happens: /status
// and the metrics show the hold and its time growing, and the sender's
// progress reports say it is held back, with nothing moving, until the
// reader lets go; the sender's summary then has the receiver's held-back
// time.
func TestHeldBackShowsWhileAReaderHoldsABlock(t *testing.T) {
	const nbufs, bufsz, msg = 4, 8192, 2048
	for _, mode := range []wire.Mode{wire.ModeSend, wire.ModeWrite} {
		t.Run(mode.String(), func(t *testing.T) {
			hh := startHeld(t, mode, nbufs, bufsz, msg, 1)
			defer hh.letGo()
			hs, held, readBytes, letGo := hh.hs, hh.held, hh.readBytes, hh.letGo
			srv := httptest.NewServer(hs.rx.Tracker().Handler())
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			const total = 3 * nbufs * bufsz
			prog := newProgressLog()
			type sent struct {
				res sender.Result
				err error
			}
			done := make(chan sent, 1)
			go func() {
				res, err := hs.send(ctx, sender.Config{Mode: mode, QPs: 2, MsgBytes: msg, Bytes: total, Source: sender.PatternSource{Seed: 5}, TxDepth: 4,
					Progress: prog.add, ProgressEvery: time.Millisecond})
				done <- sent{res, err}
			}()
			select {
			case <-held:
			case <-ctx.Done():
				t.Fatal("the reader got no block")
			}
			defer letGo() // a failed test lets the ring go before it cancels the sender

			// The sender reports the hold, and reports while nothing moves:
			// the ring's blocks have all landed and the reader keeps the
			// first one, which the stream needs next. (Short holds before
			// that, while the receiver waits for its ring worker to open the
			// next block, end at once.)
			stuck := func(p sender.Progress) bool { return p.Holding && p.Acked == nbufs*bufsz }
			p1, p2, err := prog.await(ctx, 0, func(prev, p sender.Progress) bool { return stuck(prev) && stuck(p) })
			if err != nil {
				t.Fatalf("no two progress reports in a row said the sender is held back, with nothing moving, while the reader keeps a block: %v", err)
			}
			if p1.HeldBack <= 0 || p2.HeldBack <= p1.HeldBack || p2.HoldFor <= p1.HoldFor || p2.Acked >= total {
				t.Fatalf("progress while stalled: %+v then %+v: want held-back time above 0 and growing", p1, p2)
			}

			// The receiver's /status and metrics show the hold growing (once
			// it has taken in the completions of the last blocks).
			s1 := getStatus(t, srv.URL)
			for s1.HeldBackSince == "" && ctx.Err() == nil {
				time.Sleep(time.Millisecond)
				s1 = getStatus(t, srv.URL)
			}
			time.Sleep(time.Millisecond) // let the clock move between the two reads
			s2 := getStatus(t, srv.URL)
			since, err := time.Parse(time.RFC3339Nano, s1.HeldBackSince)
			if err != nil || s2.HeldBackSince != s1.HeldBackSince {
				t.Fatalf("heldBackSince %q then %q: want the same RFC 3339 time (%v)", s1.HeldBackSince, s2.HeldBackSince, err)
			}
			if since.After(time.Now()) || s1.HeldBackSeconds <= 0 || s2.HeldBackSeconds <= s1.HeldBackSeconds {
				t.Fatalf("heldBackSeconds %g then %g since %s: want it above 0 and growing", s1.HeldBackSeconds, s2.HeldBackSeconds, since)
			}
			m1 := testio.Metric(t, srv.URL, "ringcap_recv_held_back_seconds_total")
			c1 := testio.Metric(t, srv.URL, "ringcap_recv_held_back_current_seconds")
			time.Sleep(time.Millisecond)
			m2 := testio.Metric(t, srv.URL, "ringcap_recv_held_back_seconds_total")
			c2 := testio.Metric(t, srv.URL, "ringcap_recv_held_back_current_seconds")
			if m1 <= 0 || m2 <= m1 || c1 <= 0 || c2 <= c1 {
				t.Fatalf("held-back metrics total %g then %g, current hold %g then %g: want them above 0 and growing", m1, m2, c1, c2)
			}

			letGo()
			var r sent
			select {
			case r = <-done:
			case <-ctx.Done():
				t.Fatal("the sender did not finish after the reader let go")
			}
			if r.err != nil || !r.res.Complete {
				t.Fatalf("send %+v: %v", r.res, r.err)
			}
			if r.res.HeldBackSeconds < s2.HeldBackSeconds {
				t.Fatalf("sender's summary says held back %.6f s, the receiver had already reported %.6f s", r.res.HeldBackSeconds, s2.HeldBackSeconds)
			}
			if err := hs.wait(); err != nil {
				t.Fatalf("receiver: %v", err)
			}
			if n := <-readBytes; n != total {
				t.Fatalf("reader read %d bytes, want %d", n, total)
			}
			st := getStatus(t, srv.URL)
			if st.HeldBackSince != "" || st.HeldBackSeconds < s2.HeldBackSeconds {
				t.Fatalf("after the hold: heldBackSince %q, heldBackSeconds %g (had %g): want no hold going on and the time kept", st.HeldBackSince, st.HeldBackSeconds, s2.HeldBackSeconds)
			}
			if c := testio.Metric(t, srv.URL, "ringcap_recv_held_back_current_seconds"); c != 0 {
				t.Fatalf("current hold %g s after it ended", c)
			}
		})
	}
}

// stuckWriter is a BlockWriter over a ring whose readers hold every block
// once the first nbufs are filled (OpenBlock then waits until cancelled), and
// whose end of data waits for a block too, until release is closed; ending
// is closed when the end of data begins to wait.
type stuckWriter struct {
	nbufs   int
	opened  int
	ending  chan struct{}
	release chan struct{}
}

func (w *stuckWriter) WriteHeader([]byte) error { return nil }

func (w *stuckWriter) OpenBlock(ctx context.Context) (int, error) {
	if w.opened < w.nbufs {
		w.opened++
		return w.opened - 1, nil
	}
	<-ctx.Done()
	return 0, ctx.Err()
}

func (w *stuckWriter) MarkFilled(context.Context, int, bool) error { return nil }

func (w *stuckWriter) EndOfData(context.Context) error {
	close(w.ending)
	<-w.release
	return nil
}

// A stream that ends while readers hold the receiver back stays held back
// until the end of the observation is in the ring: while that waits for a
// block, /status still shows the hold.
func TestHoldLastsUntilTheEndOfDataIsInTheRing(t *testing.T) {
	const nbufs, bufsz, msg = 4, 8192, 2048
	blocks := make([][]byte, nbufs)
	for i := range blocks {
		blocks[i] = make([]byte, bufsz)
	}
	w := &stuckWriter{nbufs: nbufs, ending: make(chan struct{}), release: make(chan struct{})}
	var once sync.Once
	letGo := func() { once.Do(func() { close(w.release) }) }
	defer letGo()
	n := memfabric.NewNet()
	cfg := ReceiverConfig{Mode: wire.ModeWrite, QPs: 2, MsgBytes: msg, RxDepth: 4, StopObservations: 1,
		Header: ObservationHeaders{Size: 4096}}
	rx, err := NewReceiver(cfg, RingGeometry{NBufs: nbufs, BufSize: bufsz}, w, memfabric.NewReceiver(n, blocks, wire.MRWholeRing), nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	served, stopped := make(chan error, 1), make(chan struct{})
	go func() { served <- rx.Serve(ctx, ln); close(stopped) }()
	defer func() { cancel(); letGo(); <-stopped }()

	sctx, stopSender := context.WithCancel(ctx)
	defer stopSender()
	prog := newProgressLog()
	sent := make(chan error, 1)
	go func() {
		f := memfabric.NewSender(n, make([]byte, 2*4*msg))
		_, err := sender.Send(sctx, ln.Addr().String(), sender.Config{Mode: wire.ModeWrite, QPs: 2, MsgBytes: msg, Bytes: 3 * nbufs * bufsz,
			Source: sender.PatternSource{Seed: 1}, TxDepth: 4, Progress: prog.add, ProgressEvery: time.Millisecond}, f)
		sent <- err
	}()
	// Stuck for good: every block landed and none comes free. (Short holds
	// before, while the ring worker opens the next block, end at once.)
	if _, _, err := prog.await(ctx, 0, func(_, p sender.Progress) bool { return p.Holding && p.Acked == nbufs*bufsz }); err != nil {
		t.Fatalf("the sender never reported the hold: %v", err)
	}
	stopSender() // the stream ends while the receiver is held back
	select {
	case <-w.ending:
	case <-ctx.Done():
		t.Fatal("the receiver never ended the observation")
	}
	s1 := rx.Tracker().Snapshot()
	if s1.HeldBackSince == "" || s1.HeldBackSeconds <= 0 {
		t.Fatalf("while the end of data waits for a block: heldBackSince %q, heldBackSeconds %g: want the hold going on", s1.HeldBackSince, s1.HeldBackSeconds)
	}
	// The sender, waiting for the receiver's word, still reports the hold.
	if _, _, err := prog.await(ctx, prog.len(), func(_, p sender.Progress) bool { return p.Holding }); err != nil {
		t.Fatalf("no progress report while the sender waits for the receiver to end the observation: %v", err)
	}
	letGo()
	select {
	case err := <-sent:
		if err == nil {
			t.Fatal("the sender stopped mid-stream reports success")
		}
	case <-ctx.Done():
		t.Fatal("the sender did not return")
	}
	if err := <-served; err != nil {
		t.Fatalf("receiver: %v", err)
	}
	s2 := rx.Tracker().Snapshot()
	if s2.HeldBackSince != "" || s2.HeldBackSeconds < s1.HeldBackSeconds {
		t.Fatalf("after the end of data: heldBackSince %q, heldBackSeconds %g (had %g)", s2.HeldBackSince, s2.HeldBackSeconds, s1.HeldBackSeconds)
	}
}

// A sender that connects while the readers hold every ring block waits for its
// answer as long as the receiver reports it is held back (Held before the
// Accept), each report giving it more time, shows the hold in its
// progress, and streams once a block comes free, instead of failing with a
// timeout that never says why.
func TestHandshakeWaitsWhileReadersHoldEveryBlock(t *testing.T) {
	const nbufs, bufsz, msg = 4, 8192, 2048
	for _, mode := range []wire.Mode{wire.ModeSend, wire.ModeWrite} {
		t.Run(mode.String(), func(t *testing.T) {
			hh := startHeld(t, mode, nbufs, bufsz, msg, 2)
			defer hh.letGo()
			hs, held, letGo := hh.hs, hh.held, hh.letGo
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			// Observation 0 fills every block; the reader keeps the first.
			cfg := sender.Config{Mode: mode, QPs: 2, MsgBytes: msg, Bytes: nbufs * bufsz, Source: sender.PatternSource{Seed: 5}, TxDepth: 4}
			if res, err := hs.send(ctx, cfg); err != nil || !res.Complete {
				t.Fatalf("observation 0: %+v %v", res, err)
			}
			<-held
			// Observation 1 finds no free block: its sender waits far longer than
			// its answer timeout, while the receiver says it is held back.
			prog := newProgressLog()
			cfg.Bytes, cfg.DialTimeout, cfg.AnswerTimeout, cfg.Progress, cfg.ProgressEvery = bufsz, 100*time.Millisecond, 1200*time.Millisecond, prog.add, time.Millisecond
			deadline := cfg.DialTimeout + cfg.AnswerTimeout // without the receiver's reports
			done := make(chan error, 1)
			var res sender.Result
			go func() {
				var err error
				res, err = hs.send(ctx, cfg)
				done <- err
			}()
			holding := func(p sender.Progress) bool { return p.Holding && p.Acked == 0 }
			p1, p2, err := prog.await(ctx, 0, func(prev, p sender.Progress) bool {
				return holding(prev) && holding(p) && p.Elapsed > deadline
			})
			if err != nil {
				select {
				case serr := <-done:
					t.Fatalf("the sender gave up while the readers held every block: %v", serr)
				default:
				}
				t.Fatalf("no two reports of a hold before the answer, the second past the answer's first deadline: %v", err)
			}
			letGo()
			if err := <-done; err != nil || !res.Complete || res.HeldBackSeconds < p2.HoldFor.Seconds() {
				t.Fatalf("after the hold (%v then %v): %+v %v", p1.HoldFor, p2.HoldFor, res, err)
			}
		})
	}
}

// heldSetup is a receiver (2 queue pairs) on a fresh ring whose one reader
// keeps the first block it gets until letGo.
type heldSetup struct {
	hs        *harness
	held      <-chan struct{} // closed once the reader holds its block
	readBytes <-chan uint64   // what the reader read, when it is done
	letGo     func()          // lets the reader go on (idempotent)
}

// startHeld starts a heldSetup whose receiver stops after stopObs
// observations. The reader stops after the receiver (cleanups run last
// first), so that a receiver ending a failed test finds its blocks cleared.
func startHeld(t *testing.T, mode wire.Mode, nbufs, bufsz, msg uint64, stopObs int) heldSetup {
	t.Helper()
	h := testRing(t, nbufs, bufsz)
	release := make(chan struct{})
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	held, readBytes := holdingReader(t, context.Background(), h, release)
	hs := startReceiver(t, h, ReceiverConfig{Mode: mode, QPs: 2, MsgBytes: msg, RxDepth: 4, StopObservations: stopObs}, wire.MRWholeRing)
	return heldSetup{hs: hs, held: held, readBytes: readBytes, letGo: letGo}
}
