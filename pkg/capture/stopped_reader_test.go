package capture

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/sender"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/dada"
)

// stoppedReader is a reader stopped before the stream starts (as a reader
// process under SIGSTOP): it reads nothing until release is closed, then
// reads one observation whole and sends the bytes it read.
func stoppedReader(t *testing.T, h *dada.HDU, release <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		var n uint64
		defer func() { out <- n }()
		select {
		case <-release:
		case <-ctx.Done():
			return
		}
		r, err := h.LockRead(ctx)
		if err != nil {
			t.Errorf("lock read: %v", err)
			return
		}
		defer func() { _ = r.Close() }()
		if _, err := r.ReadHeader(ctx); err != nil {
			t.Errorf("read header: %v", err)
			return
		}
		for {
			b, err := r.NextBlock(ctx)
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				t.Errorf("read block: %v", err)
				return
			}
			n += uint64(len(b.Data))
			if err := r.MarkCleared(); err != nil {
				t.Errorf("clear block: %v", err)
				return
			}
		}
	}()
	return out
}

// A reader stopped before the stream starts (e2e step 7: 4 queue pairs, 64
// KiB messages, a ring of 8 blocks of 1 MiB) holds the receiver back once
// every ring block has landed: the receiver's status and the sender's summary
// say so, and nothing is lost when the reader goes on. Several runs, for
// their timing to vary.
func TestStoppedReaderHoldsTheStreamBack(t *testing.T) {
	for _, mode := range []wire.Mode{wire.ModeSend, wire.ModeWrite} {
		t.Run(mode.String(), func(t *testing.T) { stoppedReaderRuns(t, mode) })
	}
}

func stoppedReaderRuns(t *testing.T, mode wire.Mode) {
	const nbufs, bufsz, msg, qps = 8, 1 << 20, 64 << 10, 4
	const total = 4 * nbufs * bufsz
	for i := range 5 {
		h := testRing(t, nbufs, bufsz)
		release := make(chan struct{})
		letGo := sync.OnceFunc(func() { close(release) })
		readBytes := stoppedReader(t, h, release)
		hs := startReceiver(t, h, ReceiverConfig{Mode: mode, QPs: qps, MsgBytes: msg, StopObservations: 1}, wire.MRWholeRing)
		t.Cleanup(letGo) // a failed run lets the reader go before the receiver stops
		srv := httptest.NewServer(hs.rx.Tracker().Handler())
		t.Cleanup(srv.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		t.Cleanup(cancel)
		type sent struct {
			res sender.Result
			err error
		}
		done := make(chan sent, 1)
		go func() {
			res, err := hs.send(ctx, sender.Config{Mode: mode, QPs: qps, MsgBytes: msg, Bytes: total, Source: sender.PatternSource{Seed: 1}})
			done <- sent{res, err}
		}()
		st := getStatus(t, srv.URL)
		deadline := time.Now().Add(20 * time.Second)
		for st.HeldBackSince == "" && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			st = getStatus(t, srv.URL)
		}
		if st.HeldBackSince == "" {
			t.Fatalf("run %d: no hold reported while the reader is stopped: bytes %d, blocks %d", i, st.BytesReceived, st.BlocksFilled)
		}
		letGo()
		r := <-done
		if r.err != nil || !r.res.Complete || r.res.HeldBackSeconds <= 0 {
			t.Fatalf("run %d: send %+v: %v", i, r.res, r.err)
		}
		if err := hs.wait(); err != nil {
			t.Fatalf("run %d: receiver: %v", i, err)
		}
		if n := <-readBytes; n != total {
			t.Fatalf("run %d: reader read %d bytes, want %d", i, n, total)
		}
	}
}
