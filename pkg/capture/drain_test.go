package capture

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/endpoint"
	"github.com/ringcap/ringcap/pkg/capture/memfabric"
	"github.com/ringcap/ringcap/pkg/capture/sender"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/dada"
)

// A run that created its ring and reaches its stop condition while a slow
// reader is still blocks behind waits for it before destroying the ring: the
// reader gets every byte (e2e step 8 saw "clear block of ring b1: ring was
// removed" with two blocks unread when the ring was destroyed at once).
func TestRunWaitsForASlowReaderBeforeDestroyingItsRing(t *testing.T) {
	key := reserveKey()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := memfabric.NewNet()
	const total = 8 * 8192
	tr, errc := runCapture(t, Capture{
		Ring: dada.Config{Key: key, NBufs: 4, BufSize: 8192, HeaderBufSize: 4096, Readers: 1}, Create: true, Drain: 30 * time.Second,
		Listen: endpoint.Listen{Addr: "127.0.0.1:0"}, Device: endpoint.Request{GIDIndex: -1}, Getenv: noEnv,
		Receiver: ReceiverConfig{Mode: wire.ModeWrite, QPs: 2, MsgBytes: 2048, StopObservations: 1, Header: ObservationHeaders{Template: []byte("HDR_VERSION 1.0\n")}},
	}, n)
	h, err := dada.Connect(key, dada.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Close() }()
	reads := readObservations(t, ctx, h, 1, 3, 100*time.Millisecond)
	cfg := sender.Config{Mode: wire.ModeWrite, QPs: 2, MsgBytes: 2048, Bytes: total, Source: sender.PatternSource{Seed: 3}}
	res, err := sender.Send(ctx, "127.0.0.1:"+strconv.Itoa(tr.Snapshot().Endpoint.Port), cfg, memfabric.NewSender(n, make([]byte, sender.SendBufferBytes(cfg))))
	if err != nil || !res.Complete {
		t.Fatalf("send: %+v %v", res, err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if obs := <-reads; len(obs) != 1 || obs[0].bytes != total || obs[0].mismatches != 0 || obs[0].err != nil {
		t.Fatalf("reader %+v, want all %d bytes read before the ring went", obs, total)
	}
	if _, err := dada.Connect(key, dada.ConnectOptions{}); err == nil {
		t.Fatalf("ring %s still there after Run", key)
	}
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
	err := drainReaders(context.Background(), h, 200*time.Millisecond, log)
	if err == nil || !strings.Contains(err.Error(), "reader slot 0 has 3 unread") || !strings.Contains(err.Error(), "of 3 filled") {
		t.Fatalf("drain with nobody reading: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := drainReaders(ctx, h, time.Hour, log); err != nil {
		t.Fatalf("interrupted drain: %v", err)
	}
}

// A slot that has read everything (or a ring nothing was written to) needs
// no wait.
func TestUnreadBlocksPerSlot(t *testing.T) {
	st := dada.RingState{WBufCurr: 10, Readers: []dada.ReaderState{{RBufs: 10}, {RBufs: 7}, {RBufs: 0}}}
	got := unreadBlocks(st)
	if got[0] != 0 || got[1] != 3 || got[2] != 10 {
		t.Fatalf("unread %v", got)
	}
	if d := describeUnread(got); d != "reader slot 1 has 3 unread, reader slot 2 has 10 unread" {
		t.Fatalf("describe %q", d)
	}
	if d := describeUnread(unreadBlocks(dada.RingState{Readers: []dada.ReaderState{{}}})); d != "" {
		t.Fatalf("empty ring: %q", d)
	}
}
