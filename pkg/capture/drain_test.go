package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/endpoint"
	"github.com/ringcap/ringcap/pkg/capture/memfabric"
	"github.com/ringcap/ringcap/pkg/capture/ring"
	"github.com/ringcap/ringcap/pkg/capture/sender"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/pattern"
	"k8s.io/component-base/metrics/testutil"
)

// A run that created its ring and reaches its stop condition while a reader
// is still blocks behind waits for it before destroying the ring, saying so in
// its status (Finished: the operator shows the readers draining): the reader
// gets every byte. (e2e step 8 saw "clear block of ring b1: ring was removed"
// with two blocks unread when the ring was destroyed at once.)
func TestRunWaitsForAReaderBehindBeforeDestroyingItsRing(t *testing.T) {
	key := reserveKey()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := memfabric.NewNet()
	const total, bufsz = 8 * 8192, 8192
	tr, errc := runCapture(t, Capture{
		Ring: dada.Config{Key: key, NBufs: 4, BufSize: bufsz, HeaderBufSize: 4096, Readers: 1}, Create: true, Drain: 30 * time.Second,
		Listen: endpoint.Listen{Addr: "127.0.0.1:0"}, Device: endpoint.Request{GIDIndex: -1}, Getenv: noEnv,
		Receiver: ReceiverConfig{Mode: wire.ModeWrite, QPs: 2, MsgBytes: 2048, StopObservations: 1, Header: ObservationHeaders{Template: []byte("HDR_VERSION 1.0\n")}},
	}, n)
	h, err := dada.Connect(key, dada.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Close() }()
	resume := make(chan struct{})
	reads := gatedReader(ctx, h, 4, resume) // stops after 4 of the 8 blocks (the ring holds the other 4) until resumed
	cfg := sender.Config{Mode: wire.ModeWrite, QPs: 2, MsgBytes: 2048, Bytes: total, Source: sender.PatternSource{Seed: 3}}
	res, err := sender.Send(ctx, "127.0.0.1:"+strconv.Itoa(tr.Snapshot().Endpoint.Port), cfg, memfabric.NewSender(n, make([]byte, sender.SendBufferBytes(cfg))))
	if err != nil || !res.Complete {
		t.Fatalf("send: %+v %v", res, err)
	}
	for s := tr.Snapshot(); s.State != statusdoc.StateFinished || !strings.Contains(s.Message, "waiting for the readers"); s = tr.Snapshot() {
		select {
		case err := <-errc:
			t.Fatalf("Run returned %v while its reader held blocks unread (status %s: %s)", err, s.State, s.Message)
		case <-ctx.Done():
			t.Fatalf("status while the reader is behind: %s: %s", s.State, s.Message)
		case <-time.After(5 * time.Millisecond):
		}
	}
	close(resume)
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if r := <-reads; r.err != nil || r.bytes != total || r.bad != 0 {
		t.Fatalf("reader %+v, want all %d bytes read before the ring went", r, total)
	}
	if _, err := dada.Connect(key, dada.ConnectOptions{}); err == nil {
		t.Fatalf("ring %s still there after Run", key)
	}
}

type gatedRead struct {
	bytes uint64
	bad   int
	err   error
}

// gatedReader reads one observation of the pattern (seed 3), stopping after
// `after` blocks until resume is closed.
func gatedReader(ctx context.Context, h *dada.HDU, after int, resume <-chan struct{}) <-chan gatedRead {
	out := make(chan gatedRead, 1)
	go func() {
		var res gatedRead
		defer func() { out <- res }()
		r, err := h.LockRead(ctx)
		if err != nil {
			res.err = err
			return
		}
		defer func() { _ = r.Close() }()
		if _, res.err = r.ReadHeader(ctx); res.err != nil {
			return
		}
		for i := 0; ; i++ {
			if i == after {
				<-resume
			}
			b, err := r.NextBlock(ctx)
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				res.err = err
				return
			}
			if _, ok := pattern.Verify(b.Data, 3, res.bytes); !ok {
				res.bad++
			}
			res.bytes += uint64(len(b.Data))
			if res.err = r.MarkCleared(); res.err != nil {
				return
			}
		}
	}()
	return out
}

// fillAndClose writes n full blocks and ends the observation.
func fillAndClose(t *testing.T, h *dada.HDU, n int) {
	t.Helper()
	w, err := h.LockWrite(context.Background(), dada.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteHeader([]byte("HDR_VERSION 1.0\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, n*h.Data.BufSize())); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// With no reader clearing a block, the wait gives up after the stall time
// and says which slot left how many blocks; an interrupt ends it at once.
func TestDrainReadersGivesUpOnAStalledSlot(t *testing.T) {
	h := testRing(t, 4, 4096)
	fillAndClose(t, h, 3)
	log := slog.New(slog.DiscardHandler)
	err := ring.DrainReaders(context.Background(), h, 200*time.Millisecond, log)
	if err == nil || !strings.Contains(err.Error(), "reader slot 0 has 3 unread") || !strings.Contains(err.Error(), "of 3 filled") {
		t.Fatalf("drain with nobody reading: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ring.DrainReaders(ctx, h, time.Hour, log); err != nil {
		t.Fatalf("interrupted drain: %v", err)
	}
}

// A stop (SIGINT/SIGTERM) while no reader frees a block ends the run within the stop
// grace instead of waiting for ever to end the observation, and the ring it created
// is gone.
func TestRunStopsWhileTheReadersHoldEveryBlock(t *testing.T) {
	key := reserveKey()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	n := memfabric.NewNet()
	tr, errc := runCaptureContext(t, ctx, Capture{
		Ring: dada.Config{Key: key, NBufs: 4, BufSize: 8192, HeaderBufSize: 4096, Readers: 1}, Create: true, Drain: 30 * time.Second,
		Listen: endpoint.Listen{Addr: "127.0.0.1:0"}, Device: endpoint.Request{GIDIndex: -1}, Getenv: noEnv,
		Receiver: ReceiverConfig{Mode: wire.ModeWrite, QPs: 2, MsgBytes: 2048, Header: ObservationHeaders{Template: []byte("HDR_VERSION 1.0\n")}},
	}, n)
	sctx, scancel := context.WithCancel(context.Background())
	sent := make(chan error, 1)
	go func() {
		cfg := sender.Config{Mode: wire.ModeWrite, QPs: 2, MsgBytes: 2048, Bytes: 16 * 8192, Source: sender.PatternSource{Seed: 3}}
		_, err := sender.Send(sctx, "127.0.0.1:"+strconv.Itoa(tr.Snapshot().Endpoint.Port), cfg, memfabric.NewSender(n, make([]byte, sender.SendBufferBytes(cfg))))
		sent <- err
	}()
	defer func() {
		scancel()
		if err := <-sent; err != nil {
			t.Logf("sender after the stop: %v", err)
		}
	}()
	deadline := time.Now().Add(time.Minute)
	for s := tr.Snapshot(); s.HeldBackSince == ""; s = tr.Snapshot() { // nobody reads: the 4 blocks fill and stay
		if time.Now().After(deadline) {
			t.Fatalf("the receiver was never held back: %+v", s)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The status and the metrics show why: no block is free to the writer, each waits for
	// the empty reader slot (filled) or is held open by the receiver, which cannot hand it
	// over before it opens the next.
	f := tr.Snapshot().RingFill
	if f == nil || f.FilledBlocks+f.OpenBlocks != 4 || f.FilledBlocks < 1 || f.Blocks != 4 || len(f.Readers) != 1 ||
		f.Readers[0].Connected || f.Readers[0].LagBlocks != f.FilledBlocks || f.Readers[0].LagBytes != uint64(f.FilledBlocks)*8192 {
		t.Errorf("ringFill while held back: %+v, want all 4 blocks filled or open, slot 0 empty and behind by the filled ones", f)
	}
	if err := testutil.GatherAndCompare(tr.Gatherer(), strings.NewReader(`
# HELP ringcap_ring_blocks Blocks of the data ring.
# TYPE ringcap_ring_blocks gauge
ringcap_ring_blocks 4
# HELP ringcap_ring_reader_connected 1 while a reader holds the slot, 0 for an empty slot (the writer still waits for it).
# TYPE ringcap_ring_reader_connected gauge
ringcap_ring_reader_connected{slot="0"} 0
`), "ringcap_ring_blocks", "ringcap_ring_reader_connected"); err != nil {
		t.Errorf("while held back: %v", err)
	}
	stop()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Run stopped while held: %v, want a clean stop", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return a minute after its stop while the readers held every block")
	}
	if _, err := dada.Connect(key, dada.ConnectOptions{}); err == nil {
		t.Fatalf("ring %s still there after Run", key)
	}
}

// When the observation that meets the stop condition ends in the ring, the status says
// Finished already: a reader that exits at that end of data (ring read -s) exits because
// the capture is done, and the operator must not take it for a reader that left a
// running capture. Before, the status said Receiving until the receiver's teardown was
// over, which a sender that connected without a handshake stretched to the handshake
// timeout (e2e step 8 saw a capture failed with ReaderExited so).
func TestStopConditionFinishedWhenTheLastObservationEnds(t *testing.T) {
	key := reserveKey()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := memfabric.NewNet()
	const total, bufsz = 8 * 8192, 8192
	tr, errc := runCapture(t, Capture{
		Ring: dada.Config{Key: key, NBufs: 4, BufSize: bufsz, HeaderBufSize: 4096, Readers: 1}, Create: true, Drain: 30 * time.Second,
		Listen: endpoint.Listen{Addr: "127.0.0.1:0"}, Device: endpoint.Request{GIDIndex: -1}, Getenv: noEnv,
		Receiver: ReceiverConfig{Mode: wire.ModeWrite, QPs: 2, MsgBytes: 2048, StopObservations: 1, HandshakeTimeout: 20 * time.Second,
			Header: ObservationHeaders{Template: []byte("HDR_VERSION 1.0\n")}},
	}, n)
	addr := "127.0.0.1:" + strconv.Itoa(tr.Snapshot().Endpoint.Port)
	h, err := dada.Connect(key, dada.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Close() }()
	states := make(chan string, 1)
	reads := gatedReader(ctx, h, -1, nil)
	go func() { // the state at the moment the reader's observation ended
		r := <-reads
		s := tr.Snapshot()
		states <- fmt.Sprintf("%s (%s; reader %d bytes, %d bad, %v)", s.State, s.Message, r.bytes, r.bad, r.err)
	}()
	// A second sender that connects and says nothing: the receiver's teardown waits
	// for its handshake to time out.
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = silent.Close() }()
	cfg := sender.Config{Mode: wire.ModeWrite, QPs: 2, MsgBytes: 2048, Bytes: total, Source: sender.PatternSource{Seed: 3}}
	if res, err := sender.Send(ctx, addr, cfg, memfabric.NewSender(n, make([]byte, sender.SendBufferBytes(cfg)))); err != nil || !res.Complete {
		t.Fatalf("send: %+v %v", res, err)
	}
	if s := <-states; !strings.HasPrefix(s, statusdoc.StateFinished+" ") || !strings.Contains(s, "reader 65536 bytes, 0 bad, <nil>") {
		t.Errorf("status when the reader saw the end of the last observation: %s, want %s", s, statusdoc.StateFinished)
	}
	_ = silent.Close()
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
