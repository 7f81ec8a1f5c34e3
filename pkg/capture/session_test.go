package capture

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringcap/ringcap/internal/ipctest"
	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/memfabric"
	"github.com/ringcap/ringcap/pkg/capture/sender"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/pattern"
	"github.com/ringcap/ringcap/pkg/rdma/rdmatest"
)

// Host tests of the receiver and sender engines end to end, without RDMA:
// real PSRDADA rings (SysV IPC), real TCP on 127.0.0.1 for the handshake and
// the in-memory fabric for the data path.

// testKeys: PSRDADA places a ring's objects at key + k*0x10000, so each test binary
// starts in its own band of 16 high values (0x7000..0x77ff, away from pkg/dada's test
// keys) and counts the low half up in steps of 2 (K+1 is the header ring); testRing skips
// keys that are taken.
var testKeys = ipctest.NewKeys(0x7000, 0x80, 0x10, 0x100)

// reserveKey takes the next test key for a ring the code under test creates,
// and records it for the leak check.
func reserveKey() dada.Key { return dada.Key(testKeys.Next()) }

func testRing(t *testing.T, nbufs, bufsz uint64) *dada.HDU {
	t.Helper()
	return testRingReaders(t, nbufs, bufsz, 1)
}

// testRingReaders is testRing with the given number of reader slots.
func testRingReaders(t testing.TB, nbufs, bufsz uint64, readers int) *dada.HDU {
	t.Helper()
	cfg := dada.DefaultConfig()
	cfg.NBufs, cfg.BufSize, cfg.Readers = nbufs, bufsz, readers
	// A ring's objects reach past its band (key + (10+i)*0x10000), so another
	// process's ring, or one a killed run left behind, can hold one of its keys:
	// Create then fails whole, undoing what it made, and the next key is tried.
	var h *dada.HDU
	var err error
	for range 64 {
		cfg.Key = reserveKey()
		if h, err = dada.Create(cfg); !errors.Is(err, dada.ErrRingExists) {
			break
		}
		testKeys.Forget(uint32(cfg.Key)) // not ours: the leak check leaves it alone
	}
	if err != nil {
		t.Fatalf("create ring %s: %v", cfg.Key, err)
	}
	k := cfg.Key
	t.Cleanup(func() {
		if err := h.Destroy(); err != nil {
			t.Errorf("destroy ring %s: %v", k, err)
		}
	})
	return h
}

type obsResult struct {
	header     string
	bytes      uint64
	blocks     int
	mismatches int
	err        error
}

// readObservations reads n observations from the ring, verifying every byte
// against the pattern of seed; delay slows the reader down per block.
func readObservations(t *testing.T, ctx context.Context, h *dada.HDU, n int, seed uint64, delay time.Duration) <-chan []obsResult {
	return readPaced(t, ctx, h, n, seed, func(int) time.Duration { return delay })
}

// readPaced is readObservations holding the observation's block b (from 0)
// for pause(b) before it releases it.
func readPaced(t *testing.T, ctx context.Context, h *dada.HDU, n int, seed uint64, pause func(block int) time.Duration) <-chan []obsResult {
	out := make(chan []obsResult, 1)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done }) // before the ring is destroyed
	go func() {
		var res []obsResult
		defer close(done)
		defer func() { out <- res }()
		r, err := h.LockRead(ctx)
		if err != nil {
			res = append(res, obsResult{err: err})
			return
		}
		defer func() { _ = r.Close() }()
		for range n {
			var o obsResult
			hdr, err := r.ReadHeader(ctx)
			if err != nil {
				o.err = fmt.Errorf("read header: %w", err)
				res = append(res, o)
				return
			}
			o.header = string(hdr)
			for {
				b, err := r.NextBlock(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					o.err = err
					res = append(res, o)
					return
				}
				if bad, ok := pattern.Verify(b.Data, seed, o.bytes); !ok {
					o.mismatches++
					if o.err == nil {
						o.err = fmt.Errorf("block %d: first bad byte at stream offset %d", o.blocks, o.bytes+uint64(bad))
					}
				}
				o.bytes += uint64(len(b.Data))
				if d := pause(o.blocks); d > 0 {
					time.Sleep(d)
				}
				o.blocks++
				if err := r.MarkCleared(); err != nil {
					o.err = err
					res = append(res, o)
					return
				}
			}
			res = append(res, o)
			if err := r.Reset(); err != nil {
				res = append(res, obsResult{err: err})
				return
			}
		}
	}()
	return out
}

type harness struct {
	t    *testing.T
	h    *dada.HDU
	net  *memfabric.Net
	rx   *Receiver
	addr string
	errc chan error
	stop context.CancelFunc
}

func startReceiver(t *testing.T, h *dada.HDU, cfg ReceiverConfig, mr wire.MRMode) *harness {
	t.Helper()
	return startReceiverAt(t, h, cfg, mr, "127.0.0.1:0")
}

// startReceiverAt is startReceiver listening on addr.
func startReceiverAt(t *testing.T, h *dada.HDU, cfg ReceiverConfig, mr wire.MRMode, addr string) *harness {
	t.Helper()
	w, err := h.LockWrite(context.Background(), dada.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := memfabric.NewNet()
	blocks := make([][]byte, h.Data.NBufs())
	for i := range blocks {
		blocks[i] = h.Data.Block(i)
	}
	if cfg.Header.Size == 0 {
		cfg.Header = ObservationHeaders{Template: []byte("HDR_VERSION 1.0\n"), Size: 4096}
	}
	rx, err := NewReceiver(cfg, RingGeometryOf(h.Data), DadaWriter{W: w}, memfabric.NewReceiver(n, blocks, mr), nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	hs := &harness{t: t, h: h, net: n, rx: rx, addr: ln.Addr().String(), errc: make(chan error, 1), stop: cancel}
	go func() { hs.errc <- rx.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-hs.errc:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Logf("receiver: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("receiver did not stop")
		}
		if err := w.Close(); err != nil {
			t.Errorf("close writer: %v", err)
		}
	})
	return hs
}

func (hs *harness) send(ctx context.Context, cfg sender.Config) (sender.Result, error) {
	f := memfabric.NewSender(hs.net, make([]byte, sender.SendBufferBytes(cfg)))
	return sender.Send(ctx, hs.addr, cfg, f)
}

// wait returns Serve's result after a stop condition.
func (hs *harness) wait() error {
	select {
	case err := <-hs.errc:
		hs.errc <- err
		return err
	case <-time.After(30 * time.Second):
		return errors.New("receiver did not return")
	}
}

func TestEndToEndMatrix(t *testing.T) {
	const nbufs, bufsz, msg = 4, 16384, 4096
	for _, mode := range []wire.Mode{wire.ModeSend, wire.ModeWrite} {
		for _, mr := range []wire.MRMode{wire.MRWholeRing, wire.MRPerBlock} {
			for _, nq := range []int{1, 4, 16} {
				for _, total := range []uint64{5 * bufsz, 5*bufsz + 1000, 3*bufsz - msg + 1} {
					name := fmt.Sprintf("%s/%s/qps=%d/bytes=%d", mode, mr, nq, total)
					t.Run(name, func(t *testing.T) {
						h := testRing(t, nbufs, bufsz)
						hs := startReceiver(t, h, ReceiverConfig{Mode: mode, QPs: nq, MsgBytes: msg, RxDepth: 8, StopObservations: 1}, mr)
						ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
						defer cancel()
						reads := readObservations(t, ctx, h, 1, 42, 0)
						res, err := hs.send(ctx, sender.Config{Mode: mode, QPs: nq, MsgBytes: msg, Bytes: total, Source: sender.PatternSource{Seed: 42}, TxDepth: 4})
						if err != nil {
							t.Fatalf("send: %v", err)
						}
						if !res.Complete || res.Bytes != total || res.Receiver.Bytes != total {
							t.Fatalf("send result %+v, want %d bytes complete", res, total)
						}
						ob := waitOneObservation(t, hs, reads, total)
						if want := int((total + bufsz - 1) / bufsz); ob.blocks != want {
							t.Fatalf("reader saw %d blocks, want %d (no extra empty block)", ob.blocks, want)
						}
						st := hs.rx.Tracker().Snapshot()
						if st.BytesReceived != total || st.Observations != 1 || st.IncompleteObs != 0 || st.LastObservation == nil || !st.LastObservation.Complete {
							t.Fatalf("status %+v", st)
						}
					})
				}
			}
		}
	}
}

func TestTwoObservationsAndSlowReader(t *testing.T) {
	const nbufs, bufsz, msg = 4, 8192, 2048
	for _, mode := range []wire.Mode{wire.ModeSend, wire.ModeWrite} {
		t.Run(mode.String(), func(t *testing.T) {
			h := testRing(t, nbufs, bufsz)
			hs := startReceiver(t, h, ReceiverConfig{Mode: mode, QPs: 4, MsgBytes: msg, RxDepth: 4, StopObservations: 2}, wire.MRWholeRing)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			// A slow reader: the sender must be held back, nothing may be lost.
			reads := readObservations(t, ctx, h, 2, 7, 20*time.Millisecond)
			for i, total := range []uint64{12*bufsz + 3, 2 * bufsz} {
				res, err := hs.send(ctx, sender.Config{Mode: mode, QPs: 4, MsgBytes: msg, Bytes: total, Source: sender.PatternSource{Seed: 7}, TxDepth: 4})
				if err != nil || !res.Complete {
					t.Fatalf("observation %d: send %+v: %v", i, res, err)
				}
			}
			obs := waitObservations(t, hs, reads, 12*bufsz+3, 2*bufsz)
			for i := range obs {
				if !regexp.MustCompile(fmt.Sprintf(`(?m)^RINGCAP_OBSERVATION +%d$`, i)).MatchString(obs[i].header) {
					t.Fatalf("observation %d header %q", i, obs[i].header)
				}
			}
			st := hs.rx.Tracker().Snapshot()
			if st.HeldBackSeconds <= 0 {
				t.Fatalf("a slow reader held nothing back: %+v", st)
			}
			if st.Observations != 2 || st.BytesReceived != 14*bufsz+3 {
				t.Fatalf("status %+v", st)
			}
		})
	}
}

// With BusyPoll the receive loop never gets ready to sleep on completion
// events, even while a slow reader keeps it waiting, and still loses nothing;
// without it, the same stream does sleep (so the count can tell them apart).
func TestBusyPollNeverSleeps(t *testing.T) {
	const nbufs, bufsz, msg = 4, 8192, 2048
	for _, mode := range []wire.Mode{wire.ModeSend, wire.ModeWrite} {
		for _, busy := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/busy=%v", mode, busy), func(t *testing.T) {
				h := testRing(t, nbufs, bufsz)
				hs := startReceiver(t, h, ReceiverConfig{Mode: mode, QPs: 4, MsgBytes: msg, RxDepth: 4, StopObservations: 1, BusyPoll: busy}, wire.MRWholeRing)
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				reads := readObservations(t, ctx, h, 1, 3, 20*time.Millisecond)
				const total = 10*bufsz + 5
				res, err := hs.send(ctx, sender.Config{Mode: mode, QPs: 4, MsgBytes: msg, Bytes: total, Source: sender.PatternSource{Seed: 3}, TxDepth: 4, BusyPoll: busy})
				if err != nil || !res.Complete {
					t.Fatalf("send %+v: %v", res, err)
				}
				waitOneObservation(t, hs, reads, total)
				arms := hs.net.Arms()
				if busy && arms != 0 {
					t.Fatalf("busy-polling receiver armed its completion queue %d times", arms)
				}
				if !busy && arms == 0 {
					t.Fatal("the receiver never got ready to sleep while the slow reader held it: the test cannot tell busy polling apart")
				}
			})
		}
	}
}

// waitOneObservation waits for the receiver to return and for the reader's one
// observation, which must hold exactly want verified bytes; it returns it.
func waitOneObservation(t *testing.T, hs *harness, reads <-chan []obsResult, want uint64) obsResult {
	t.Helper()
	return waitObservations(t, hs, reads, want)[0]
}

// waitObservations waits for the receiver to return and for the reader's
// observations, one per want, observation i holding exactly want[i] verified
// bytes; it returns them.
func waitObservations(t *testing.T, hs *harness, reads <-chan []obsResult, want ...uint64) []obsResult {
	t.Helper()
	if err := hs.wait(); err != nil {
		t.Fatalf("receiver: %v", err)
	}
	obs := <-reads
	if len(obs) != len(want) {
		t.Fatalf("reader saw %+v, want %d observations of %v verified bytes", obs, len(want), want)
	}
	for i, o := range obs {
		if o.err != nil || o.bytes != want[i] || o.mismatches != 0 {
			t.Fatalf("observation %d: %+v, want %d verified bytes", i, o, want[i])
		}
	}
	return obs
}

// rawSender performs the handshake by hand so tests can misbehave.
type rawSender struct {
	c net.Conn
	k *wire.Conn
}

// connectRaw is a hand-driven sender: qps queue pairs with depth send slots
// of msg bytes, handshaken and connected to the receiver (closed by cleanup).
func connectRaw(t *testing.T, hs *harness, mode wire.Mode, qps, depth int, msg uint64) (*memfabric.Endpoint, *rawSender, wire.Accept) {
	t.Helper()
	ep := hs.net.Open(fabric.EndpointConfig{QPs: qps, SendDepth: depth, RecvDepth: 1}, make([]byte, uint64(depth)*msg))
	t.Cleanup(func() { _ = ep.Close() })
	rs, m := dialRaw(t, hs, wire.Preamble(), wire.Hello{Mode: mode, MsgBytes: uint32(msg), Fabric: wire.Fabric{Transport: wire.TransportVerbs}, QPs: ep.Local()})
	acc, ok := m.(wire.Accept)
	if !ok {
		t.Fatalf("answer %+v", m)
	}
	if err := ep.Connect(acc.QPs); err != nil {
		t.Fatal(err)
	}
	return ep, rs, acc
}

// awaitSendCompletions waits for n successful send completions on a raw
// sender's endpoint (their data has landed at the receiver).
func awaitSendCompletions(t *testing.T, ep *memfabric.Endpoint, n int) {
	t.Helper()
	wcs := make([]fabric.Completion, 8)
	for got := 0; got < n; {
		k, _ := ep.Poll(wcs)
		for _, wc := range wcs[:k] {
			if wc.Err != nil {
				t.Fatal(wc.Err)
			}
		}
		got += k
		time.Sleep(time.Millisecond)
	}
}

func dialRaw(t *testing.T, hs *harness, preamble []byte, hello wire.Message) (*rawSender, wire.Message) {
	t.Helper()
	c, err := net.Dial("tcp", hs.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	rs := &rawSender{c: c, k: wire.NewConn(c)}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write(preamble); err != nil {
		t.Fatal(err)
	}
	// The receiver answers a good preamble with its Settings, a bad one with a
	// Reject.
	m, err := rs.k.Recv()
	if err != nil {
		t.Fatalf("read settings: %v", err)
	}
	if _, ok := m.(wire.Settings); ok && hello != nil {
		if err := rs.k.Send(hello); err != nil {
			t.Fatal(err)
		}
		if m, err = rs.k.Recv(); err != nil {
			t.Fatalf("read answer: %v", err)
		}
	}
	return rs, m
}

func TestHandshakeRejectsAndKeepsServing(t *testing.T) {
	h := testRing(t, 4, 8192)
	hs := startReceiver(t, h, ReceiverConfig{Mode: wire.ModeSend, QPs: 4, MsgBytes: 2048, StopObservations: 1}, wire.MRWholeRing)
	good := func(n int) wire.Hello {
		ep := hs.net.Open(fabric.EndpointConfig{QPs: n, SendDepth: 1, RecvDepth: 1}, nil)
		t.Cleanup(func() { _ = ep.Close() })
		return wire.Hello{Mode: wire.ModeSend, MsgBytes: 2048, Fabric: wire.Fabric{Transport: wire.TransportVerbs}, QPs: ep.Local()}
	}
	pre := wire.Preamble()
	cases := []struct {
		name     string
		preamble []byte
		hello    wire.Message
		want     string
	}{
		{"garbage", []byte("GET / HTTP/1.1\r\n\r\n"), nil, "not a ringcap sender"},
		{"version", []byte("RCAP\x00\x06"), nil, "handshake version 6 is not supported (this side accepts versions 7 and 8)"},
		{"transport", pre, wire.Hello{Mode: wire.ModeSend, MsgBytes: 2048, Fabric: wire.Fabric{Transport: wire.TransportOFI, Provider: "tcp;ofi_rxm"},
			QPs: []wire.QPInfo{{Addr: []byte{1}}, {Addr: []byte{2}}, {Addr: []byte{3}}, {Addr: []byte{4}}}},
			`sender uses transport ofi, provider "tcp;ofi_rxm", this receiver uses transport verbs (--transport, --ofi-provider)`},
		{"qps", pre, good(8), "sender asked for 8 queue pairs, this receiver uses 4"},
		{"mode", pre, func() wire.Hello { m := good(4); m.Mode = wire.ModeWrite; return m }(), "sender asked for write mode"},
		{"msg", pre, func() wire.Hello { m := good(4); m.MsgBytes = 4096; return m }(), "4096-byte messages"},
		{"not hello", pre, wire.Credit{}, "expected a hello"},
	}
	for _, c := range cases {
		_, m := dialRaw(t, hs, c.preamble, c.hello)
		rej, ok := m.(wire.Reject)
		if !ok || !strings.Contains(rej.Message, c.want) {
			t.Errorf("%s: answer %+v, want a rejection containing %q", c.name, m, c.want)
		}
	}
	// Truncated garbage followed by a hang-up must not hurt either.
	c, err := net.Dial("tcp", hs.addr)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write([]byte("RC"))
	_ = c.Close()

	// The receiver still serves a good sender.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reads := readObservations(t, ctx, h, 1, 3, 0)
	res, err := hs.send(ctx, sender.Config{Mode: wire.ModeSend, QPs: 4, MsgBytes: 2048, Bytes: 50000, Source: sender.PatternSource{Seed: 3}})
	if err != nil || !res.Complete {
		t.Fatalf("good sender after rejections: %+v %v", res, err)
	}
	if obs := <-reads; len(obs) != 1 || obs[0].bytes != 50000 || obs[0].err != nil {
		t.Fatalf("reader: %+v", obs)
	}
	// A sender talking to a receiver of another configuration gets the message.
	var re *sender.RejectedError
	if _, err := hs.send(ctx, sender.Config{Mode: wire.ModeSend, QPs: 2, MsgBytes: 2048, Bytes: 1, Source: sender.PatternSource{}}); err == nil {
		// The receiver stopped after one observation: connection refused is fine too.
	} else if errors.As(err, &re) && !strings.Contains(re.Message, "queue pairs") {
		t.Fatalf("rejection message %q", re.Message)
	}
}

func TestSenderKilledMidStream(t *testing.T) {
	const nbufs, bufsz, msg = 4, 8192, 2048
	for _, mode := range []wire.Mode{wire.ModeSend, wire.ModeWrite} {
		t.Run(mode.String(), func(t *testing.T) {
			h := testRing(t, nbufs, bufsz)
			hs := startReceiver(t, h, ReceiverConfig{Mode: mode, QPs: 2, MsgBytes: msg, RxDepth: 16, StopObservations: 1}, wire.MRPerBlock)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			reads := readObservations(t, ctx, h, 1, 9, 0)
			ep, rs, acc := connectRaw(t, hs, mode, 2, 16, msg)
			// sender.Send slices 0..5 (1.5 blocks) and, in send mode, slice 7, then
			// vanish. In write mode each block travels on one queue pair (here
			// block b on queue pair b mod 2), in order: slices 0, 1, 2 and 4
			// go out as plain writes, and the immediates of 3 and 5 land them.
			g := wire.Geometry{BlockBytes: bufsz, MsgBytes: msg, QPs: 2, NBufs: nbufs, WholeBlocks: mode == wire.ModeWrite}
			qpOf := func(sl uint64) int {
				if g.WholeBlocks {
					return int(g.SliceBlock(sl) % 2)
				}
				return g.QP(sl)
			}
			slices, plain := []uint64{0, 1, 2, 3, 4, 5, 7}, map[uint64]bool{}
			if mode == wire.ModeWrite {
				slices, plain = slices[:6], map[uint64]bool{0: true, 1: true, 2: true, 4: true}
			}
			grants := map[uint64]wire.Credit{}
			for _, sl := range slices {
				seq, off, n := g.Slice(sl)
				boff := sl * msg % uint64(len(ep.Buffer()))
				pattern.Fill(ep.Buffer()[boff:boff+n], 9, g.StreamOffset(sl))
				wr := fabric.SendWR{ID: sl, Op: fabric.OpSendImm, Offset: boff, Length: n, Imm: uint32(sl), Signaled: true}
				if mode == wire.ModeWrite {
					for {
						if c, ok := grants[seq]; ok {
							a, k, _ := acc.BlockTarget(c.Index)
							wr.Op, wr.RemoteAddr, wr.RKey = fabric.OpWriteImm, a+off, k
							if plain[sl] {
								wr.Op = fabric.OpWrite
							}
							break
						}
						m, err := rs.k.Recv()
						if err != nil {
							t.Fatal(err)
						}
						c := m.(wire.Credit)
						grants[c.Seq] = c
					}
				}
				if err := ep.PostSend(qpOf(sl), []fabric.SendWR{wr}); err != nil {
					t.Fatal(err)
				}
			}
			// Wait for the send completions (the data landed), then die.
			awaitSendCompletions(t, ep, len(slices))
			_ = rs.c.Close()
			// Slices 0..5 are a gap-free prefix: 1.5 blocks; slice 7 (send
			// mode) lies past the gap.
			waitOneObservation(t, hs, reads, 6*msg)
			st := hs.rx.Tracker().Snapshot()
			if st.LastObservation == nil || st.LastObservation.Complete || st.IncompleteObs != 1 ||
				!strings.Contains(st.LastObservation.Message, "disconnected") {
				t.Fatalf("status does not mark the observation incomplete: %+v %+v", st, st.LastObservation)
			}
		})
	}
}

// In write mode an immediate lands its block from the first slice not landed
// yet up to the slice it names, whichever queue pair it comes on; one naming a
// slice that has already landed is a protocol error that ends the observation
// incomplete, keeping what landed before it.
func TestWriteModeImmediateForLandedSlice(t *testing.T) {
	const nbufs, bufsz, msg = 4, 8192, 2048 // 4 slices per block
	h := testRing(t, nbufs, bufsz)
	hs := startReceiver(t, h, ReceiverConfig{Mode: wire.ModeWrite, QPs: 2, MsgBytes: msg, StopObservations: 1}, wire.MRWholeRing)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reads := readObservations(t, ctx, h, 1, 3, 0)
	ep, rs, acc := connectRaw(t, hs, wire.ModeWrite, 2, 4, msg)
	m, err := rs.k.Recv()
	if err != nil {
		t.Fatal(err)
	}
	c, ok := m.(wire.Credit)
	if !ok || c.Seq != 0 {
		t.Fatalf("first grant %+v", m)
	}
	a, k, _ := acc.BlockTarget(c.Index)
	g := wire.Geometry{BlockBytes: bufsz, MsgBytes: msg, QPs: 2, NBufs: nbufs, WholeBlocks: true}
	// Queue pair 1 writes slice 0 plain and lands slices 0 and 1 with the
	// immediate of 1; once that has landed, queue pair 0 names slice 0 again.
	post := func(i, q int, sl uint64, op fabric.Op) {
		_, off, n := g.Slice(sl)
		boff := uint64(i) * msg
		pattern.Fill(ep.Buffer()[boff:boff+n], 3, g.StreamOffset(sl))
		wr := fabric.SendWR{ID: uint64(i), Op: op, Offset: boff, Length: n, Imm: uint32(sl), RemoteAddr: a + off, RKey: k, Signaled: true}
		if err := ep.PostSend(q, []fabric.SendWR{wr}); err != nil {
			t.Fatal(err)
		}
	}
	post(0, 1, 0, fabric.OpWrite)
	post(1, 1, 1, fabric.OpWriteImm)
	awaitSendCompletions(t, ep, 2)
	post(2, 0, 0, fabric.OpWriteImm)
	awaitSendCompletions(t, ep, 1)
	waitOneObservation(t, hs, reads, 2*msg)
	st := hs.rx.Tracker().Snapshot()
	if st.LastObservation == nil || st.LastObservation.Complete || !strings.Contains(st.LastObservation.Message, "queue pair 0 named slice 0, which had already landed") {
		t.Fatalf("status %+v %+v", st, st.LastObservation)
	}
}

func TestSenderCancelledEndsIncomplete(t *testing.T) {
	h := testRing(t, 4, 8192)
	hs := startReceiver(t, h, ReceiverConfig{Mode: wire.ModeWrite, QPs: 2, MsgBytes: 2048, StopObservations: 1}, wire.MRWholeRing)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reads := readObservations(t, ctx, h, 1, 5, 0)
	sctx, scancel := context.WithCancel(ctx)
	cfg := sender.Config{Mode: wire.ModeWrite, QPs: 2, MsgBytes: 2048, Duration: time.Hour, Source: sender.PatternSource{Seed: 5},
		ProgressEvery: time.Millisecond, Progress: func(p sender.Progress) {
			if p.Bytes > 100000 {
				scancel()
			}
		}}
	res, err := hs.send(sctx, cfg)
	if !errors.Is(err, context.Canceled) || res.Complete {
		t.Fatalf("cancelled send: %+v %v", res, err)
	}
	waitOneObservation(t, hs, reads, res.Bytes)
	if st := hs.rx.Tracker().Snapshot(); st.IncompleteObs != 1 {
		t.Fatalf("status %+v", st)
	}
}

// A queue pair that stalls holds back only its own slices: the others keep
// going (up to the receiver's window past the stall) instead of waiting for
// it, and every byte still lands in order.
// stallQueuePair holds the queue pair that carries slice stallSlice (in
// write mode whichever took its block) before it delivers that slice, until
// the other queue pairs have delivered want slices (or 20 s, a guard against
// a hang, not a timing check); the channel then gets their count. Only
// slices the other queue pairs delivered count, also those before the stall.
func stallQueuePair(hs *harness, stallSlice uint32, want int64) <-chan int64 {
	var total atomic.Int64
	var per [wire.MaxQPs]atomic.Int64
	stalled := atomic.Int32{}
	stalled.Store(-1)
	reached := make(chan int64, 1)
	hs.net.Hook = func(qp int, wr fabric.SendWR) {
		if wr.Imm != stallSlice || !stalled.CompareAndSwap(-1, int32(qp)) {
			total.Add(1)
			per[qp].Add(1)
			return
		}
		others := func() int64 { return total.Load() - per[qp].Load() }
		deadline := time.Now().Add(20 * time.Second)
		for others() < want && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		reached <- others()
	}
	return reached
}

func TestStalledQueuePairDoesNotStopTheOthers(t *testing.T) {
	const nbufs, bufsz, msg, nq, depth = 8, 8192, 2048, 4, 2 // 4 slices per block
	const stallSlice = 5
	// In strict slice order the sender stops at slice 13 (in send mode both
	// send slots of queue pair 1 hold slices 5 and 9), so the other queue pairs
	// could carry at most 10 slices; running ahead they reach 27 (the 8-block
	// window 1..8).
	const ahead = 20
	for _, mode := range []wire.Mode{wire.ModeSend, wire.ModeWrite} {
		t.Run(mode.String(), func(t *testing.T) {
			h := testRing(t, nbufs, bufsz)
			hs := startReceiver(t, h, ReceiverConfig{Mode: mode, QPs: nq, MsgBytes: msg, StopObservations: 1}, wire.MRWholeRing)
			reached := stallQueuePair(hs, stallSlice, ahead)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			reads := readObservations(t, ctx, h, 1, 21, 0)
			total := uint64(16*bufsz + 1000)
			res, err := hs.send(ctx, sender.Config{Mode: mode, QPs: nq, MsgBytes: msg, Bytes: total, TxDepth: depth, Source: sender.PatternSource{Seed: 21}})
			if err != nil || !res.Complete || res.Bytes != total {
				t.Fatalf("send: %+v %v", res, err)
			}
			if n := <-reached; n < ahead {
				t.Fatalf("while the queue pair of slice %d stalled the others carried %d slices, want >= %d", stallSlice, n, ahead)
			}
			waitOneObservation(t, hs, reads, total)
		})
	}
}

// A grant that arrives while a stalled queue pair holds the only work requests
// in flight still lets the others go on: the sender waits for grants as well as
// completions. Three ring blocks and a reader that keeps each block 100 ms make
// the grant for block 3 come after every other WR has completed; then the
// other queue pairs carry their slices of blocks 0..3 (12), not stop at 9.
func TestStalledQueuePairStillTakesLateGrants(t *testing.T) {
	const nbufs, bufsz, msg, nq, depth = 3, 8192, 2048, 4, 2 // 4 slices per block
	const stallSlice, want = 5, 12
	h := testRing(t, nbufs, bufsz)
	hs := startReceiver(t, h, ReceiverConfig{Mode: wire.ModeWrite, QPs: nq, MsgBytes: msg, StopObservations: 1}, wire.MRWholeRing)
	reached := stallQueuePair(hs, stallSlice, want)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reads := readObservations(t, ctx, h, 1, 23, 100*time.Millisecond)
	total := uint64(5*bufsz + 1000)
	res, err := hs.send(ctx, sender.Config{Mode: wire.ModeWrite, QPs: nq, MsgBytes: msg, Bytes: total, TxDepth: depth, Source: sender.PatternSource{Seed: 23}})
	if err != nil || !res.Complete || res.Bytes != total {
		t.Fatalf("send: %+v %v", res, err)
	}
	if n := <-reached; n < want {
		t.Fatalf("while the queue pair of slice %d stalled the others carried %d slices, want %d (the grant for block 3 was missed)", stallSlice, n, want)
	}
	waitOneObservation(t, hs, reads, total)
}

// The sender asks for a completion on at most every TxDepth/4-th work request
// of a queue pair and on the last one of each post; the stream still ends
// complete, so the unsignalled slots came back with the signalled ones.
func TestSenderSignalsSelectively(t *testing.T) {
	const nq, depth, every = 4, 16, 4
	for _, mode := range []wire.Mode{wire.ModeSend, wire.ModeWrite} {
		t.Run(mode.String(), func(t *testing.T) {
			h := testRing(t, 8, 16384)
			hs := startReceiver(t, h, ReceiverConfig{Mode: mode, QPs: nq, MsgBytes: 1024, StopObservations: 1}, wire.MRPerBlock)
			var total, signaled atomic.Int64
			// Each queue pair's WRs arrive on one goroutine, which alone
			// touches its entries of run and longest.
			run, longest := make([]int64, nq), make([]int64, nq)
			hs.net.Hook = func(qp int, wr fabric.SendWR) {
				total.Add(1)
				if wr.Signaled {
					signaled.Add(1)
					run[qp] = 0
					return
				}
				run[qp]++
				longest[qp] = max(longest[qp], run[qp])
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			reads := readObservations(t, ctx, h, 1, 5, 0)
			size := uint64(40*16384 + 333)
			// sender.Progress reports on the sender's goroutine: landed bytes never
			// pass posted ones nor go back, and the last report has them all.
			var last sender.Progress
			var progressErr error
			progress := func(p sender.Progress) {
				if p.Acked > p.Bytes || p.Acked < last.Acked {
					progressErr = fmt.Errorf("progress %+v after %+v", p, last)
				}
				last = p
			}
			res, err := hs.send(ctx, sender.Config{Mode: mode, QPs: nq, MsgBytes: 1024, Bytes: size, TxDepth: depth, Source: sender.PatternSource{Seed: 5},
				ProgressEvery: time.Microsecond, Progress: progress})
			if err != nil || !res.Complete || res.Bytes != size {
				t.Fatalf("send: %+v %v", res, err)
			}
			if progressErr != nil || last.Acked != size || last.Bytes != size {
				t.Fatalf("progress: %v; last %+v, want %d bytes acked", progressErr, last, size)
			}
			waitOneObservation(t, hs, reads, size)
			n, sig, most := total.Load(), signaled.Load(), slices.Max(longest)
			if n != int64((size+1023)/1024) || sig == n || most >= every {
				t.Fatalf("%d WRs, %d signalled, longest unsignalled run %d: want fewer signalled than posted and runs below %d", n, sig, most, every)
			}
		})
	}
}

// PostList caps every post at that many work requests, and a queue pair's
// posts still end on a signalled one: streams of known length and those a
// --duration cutoff ends arrive whole.
func TestPostListCapsEachPost(t *testing.T) {
	for _, mode := range []wire.Mode{wire.ModeSend, wire.ModeWrite} {
		for _, list := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/list%d", mode, list), func(t *testing.T) {
				h := testRing(t, 8, 16384)
				hs := startReceiver(t, h, ReceiverConfig{Mode: mode, QPs: 4, MsgBytes: 1024, StopObservations: 2}, wire.MRPerBlock)
				var posts, most atomic.Int64
				hs.net.Posted = func(_, n int) {
					posts.Add(1)
					if int64(n) > most.Load() {
						most.Store(int64(n))
					}
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				reads := readObservations(t, ctx, h, 2, 9, 0)
				size := uint64(40*16384 + 777)
				res, err := hs.send(ctx, sender.Config{Mode: mode, QPs: 4, MsgBytes: 1024, Bytes: size, TxDepth: 16, PostList: list, Source: sender.PatternSource{Seed: 9}})
				if err != nil || !res.Complete || res.Bytes != size {
					t.Fatalf("send: %+v %v", res, err)
				}
				res2, err := hs.send(ctx, sender.Config{Mode: mode, QPs: 4, MsgBytes: 1024, Duration: 50 * time.Millisecond, TxDepth: 16, PostList: list,
					Source: sender.PatternSource{Seed: 9}, RateBytesPerSecond: 4e6})
				if err != nil || !res2.Complete || res2.Bytes == 0 {
					t.Fatalf("duration send: %+v %v", res2, err)
				}
				waitObservations(t, hs, reads, size, res2.Bytes)
				if most.Load() > int64(list) || posts.Load() < int64(size/1024/uint64(list)) {
					t.Fatalf("%d posts of at most %d WRs: want at most %d per post", posts.Load(), most.Load(), list)
				}
			})
		}
	}
}

// Streams whose length the sender learns only at their end (a --duration
// cutoff, a reader that runs out) and a file read at any offset. In write
// mode the last slices of the queue pair carrying the last block then went
// out as plain writes, expecting more in the same block, and a zero-length
// immediate must still land them.
func TestDurationAndFileSources(t *testing.T) {
	for _, mode := range []wire.Mode{wire.ModeSend, wire.ModeWrite} {
		t.Run(mode.String(), func(t *testing.T) {
			h := testRing(t, 4, 8192)
			hs := startReceiver(t, h, ReceiverConfig{Mode: mode, QPs: 3, MsgBytes: 1000, StopObservations: 3}, wire.MRWholeRing)
			var tails atomic.Int64
			hs.net.Hook = func(_ int, wr fabric.SendWR) {
				if wr.Op == fabric.OpWriteImm && wr.Length == 0 {
					tails.Add(1)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			reads := readObservations(t, ctx, h, 3, 11, 0)
			res, err := hs.send(ctx, sender.Config{Mode: mode, QPs: 3, MsgBytes: 1000, Duration: 50 * time.Millisecond, Source: sender.PatternSource{Seed: 11}, RateBytesPerSecond: 2e6})
			if err != nil || !res.Complete || res.Bytes == 0 {
				t.Fatalf("duration send: %+v %v", res, err)
			}
			data := make([]byte, 3*8192+5000)
			pattern.Fill(data, 11, 0)
			r := bufio.NewReader(strings.NewReader(string(data)))
			res2, err := hs.send(ctx, sender.Config{Mode: mode, QPs: 3, MsgBytes: 1000, Source: sender.ReaderSource{R: r}})
			if err != nil || !res2.Complete || res2.Bytes != uint64(len(data)) {
				t.Fatalf("file send: %+v %v", res2, err)
			}
			res3, err := hs.send(ctx, sender.Config{Mode: mode, QPs: 3, MsgBytes: 1000, Bytes: uint64(len(data)), Source: sender.FileSource{R: bytes.NewReader(data)}})
			if err != nil || !res3.Complete || res3.Bytes != uint64(len(data)) {
				t.Fatalf("file send: %+v %v", res3, err)
			}
			if err := hs.wait(); err != nil {
				t.Fatal(err)
			}
			obs := <-reads
			if len(obs) != 3 || obs[0].bytes != res.Bytes || obs[1].bytes != uint64(len(data)) || obs[2].bytes != uint64(len(data)) {
				t.Fatalf("reader %+v", obs)
			}
			for i, o := range obs {
				if o.err != nil || o.mismatches != 0 {
					t.Fatalf("observation %d: %+v", i, o)
				}
			}
			// A block is 9 slices (8 of 1000 bytes, one of 192): the reader's
			// stream ends with slice 31, the fifth of block 3 (slices
			// 27..35, all on queue pair 0), which went out plain expecting
			// slice 32, where the reader then ran out: queue pair 0 owes a
			// zero-length immediate.
			if n := tails.Load(); mode == wire.ModeWrite && n < 1 || mode == wire.ModeSend && n != 0 {
				t.Fatalf("%d zero-length immediates in %s mode", n, mode)
			}
		})
	}
}

// Write mode hands each block to a queue pair that has room, not to the
// queue pairs in turn: one that is slow carries fewer blocks than an equal
// share, and the others carry the rest instead of waiting for it. Here queue
// pair 0 delivers nothing until the others have delivered every slice of 11
// blocks (or 20 s, a guard against a hang, not a timing check); the ring
// grants all 12 blocks at once. In turn, each would carry 3 of them, and the
// others could deliver only 9 blocks' slices while queue pair 0 waits.
func TestWriteModeBlocksGoWhereThereIsRoom(t *testing.T) {
	const nbufs, bufsz, msg, nq, blocks = 16, 8192, 2048, 4, 12 // 4 slices per block
	h := testRing(t, nbufs, bufsz)
	hs := startReceiver(t, h, ReceiverConfig{Mode: wire.ModeWrite, QPs: nq, MsgBytes: msg, StopObservations: 1}, wire.MRWholeRing)
	g := wire.Geometry{BlockBytes: bufsz, MsgBytes: msg, QPs: nq, NBufs: nbufs, WholeBlocks: true}
	var mu sync.Mutex
	carried := map[uint64]int{} // block: the queue pair that wrote it
	var others atomic.Int64
	var waited atomic.Bool
	hs.net.Hook = func(qp int, wr fabric.SendWR) {
		if qp != 0 {
			others.Add(1)
		} else if waited.CompareAndSwap(false, true) {
			deadline := time.Now().Add(20 * time.Second)
			for others.Load() < (blocks-1)*4 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		carried[g.SliceBlock(uint64(wr.Imm))] = qp
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reads := readObservations(t, ctx, h, 1, 17, 0)
	total := uint64(blocks * bufsz)
	res, err := hs.send(ctx, sender.Config{Mode: wire.ModeWrite, QPs: nq, MsgBytes: msg, Bytes: total, TxDepth: 4, Source: sender.PatternSource{Seed: 17}})
	if err != nil || !res.Complete || res.Bytes != total {
		t.Fatalf("send: %+v %v", res, err)
	}
	waitOneObservation(t, hs, reads, total)
	mu.Lock()
	defer mu.Unlock()
	per := make([]int, nq)
	for _, q := range carried {
		per[q]++
	}
	if len(carried) != blocks || per[0] >= blocks/nq {
		t.Fatalf("blocks per queue pair %v (of %d blocks), want fewer than %d on the slow queue pair 0", per, len(carried), blocks/nq)
	}
}

// In write mode each block travels on one queue pair (whichever took it), as
// plain RDMA WRITEs but for its last slice, which carries the immediate: one
// receive completion per block, whatever the number of queue pairs. A stream
// of known length ends on immediates of its own, with no zero-length ones.
func TestWriteModeOneImmediatePerBlock(t *testing.T) {
	const nbufs, bufsz, msg, nq = 4, 16384, 1024, 3 // 16 slices per block
	for _, total := range []uint64{10 * bufsz, 10*bufsz + 5000} {
		t.Run(fmt.Sprint(total), func(t *testing.T) {
			h := testRing(t, nbufs, bufsz)
			hs := startReceiver(t, h, ReceiverConfig{Mode: wire.ModeWrite, QPs: nq, MsgBytes: msg, StopObservations: 1}, wire.MRPerBlock)
			var mu sync.Mutex
			imms, plain := map[uint64]int{}, 0
			carriers := map[uint64]map[int]bool{} // block: the queue pairs that wrote into it
			g := wire.Geometry{BlockBytes: bufsz, MsgBytes: msg, QPs: nq, NBufs: nbufs, WholeBlocks: true}
			hs.net.Hook = func(qp int, wr fabric.SendWR) {
				mu.Lock()
				defer mu.Unlock()
				b := g.SliceBlock(uint64(wr.Imm))
				if carriers[b] == nil {
					carriers[b] = map[int]bool{}
				}
				carriers[b][qp] = true
				switch {
				case wr.Op == fabric.OpWrite:
					plain++
				case wr.Op == fabric.OpWriteImm && wr.Length > 0:
					imms[b]++
				default:
					t.Errorf("queue pair %d: op %d of %d bytes", qp, wr.Op, wr.Length)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			reads := readObservations(t, ctx, h, 1, 13, 0)
			res, err := hs.send(ctx, sender.Config{Mode: wire.ModeWrite, QPs: nq, MsgBytes: msg, Bytes: total, Source: sender.PatternSource{Seed: 13}, TxDepth: 8})
			if err != nil || !res.Complete || res.Bytes != total {
				t.Fatalf("send: %+v %v", res, err)
			}
			waitOneObservation(t, hs, reads, total)
			mu.Lock()
			defer mu.Unlock()
			want := map[uint64]int{}
			for sl := range g.Slices(total) {
				want[g.SliceBlock(sl)] = 1
			}
			if !maps.Equal(imms, want) || plain+len(imms) != int(g.Slices(total)) {
				t.Fatalf("immediates per block %v, plain writes %d; want %v and %d in all", imms, plain, want, g.Slices(total))
			}
			for b, qs := range carriers {
				if len(qs) != 1 {
					t.Errorf("block %d written by queue pairs %v, want one", b, qs)
				}
			}
			if st := hs.rx.Tracker().Snapshot(); st.BytesReceived != total {
				t.Fatalf("status %+v", st)
			}
		})
	}
}

// A receiver that goes away mid-stream must not leave the sender waiting for
// work requests that will never complete: the sender returns, naming the
// receiver's account, whether its in-flight work fails (retries exhausted) or
// simply never completes (a peer that retries forever).
func TestSenderReturnsWhenReceiverGoesAway(t *testing.T) {
	for _, blackhole := range []bool{false, true} {
		t.Run(fmt.Sprintf("blackhole=%v", blackhole), func(t *testing.T) {
			h := testRing(t, 4, 8192)
			hs := startReceiver(t, h, ReceiverConfig{Mode: wire.ModeWrite, QPs: 2, MsgBytes: 2048}, wire.MRWholeRing)
			hs.net.Blackhole = blackhole
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			readObservations(t, ctx, h, 1, 9, 0)
			var once sync.Once
			cfg := sender.Config{Mode: wire.ModeWrite, QPs: 2, MsgBytes: 2048, Duration: time.Hour, Source: sender.PatternSource{Seed: 9},
				ProgressEvery: time.Millisecond, Progress: func(p sender.Progress) {
					if p.Bytes > 100000 {
						once.Do(hs.stop)
					}
				}}
			res, err := hs.send(ctx, cfg)
			if err == nil || res.Complete || ctx.Err() != nil || !strings.Contains(err.Error(), "receiver stopped") {
				t.Fatalf("send after the receiver left: %+v %v (test context: %v)", res, err, ctx.Err())
			}
			t.Logf("sender: %v", err)
		})
	}
}

// A queue pair that fails is reported with the work-completion status name,
// the observation ends on what landed before, and the receiver keeps serving.
func TestCompletionErrorNamesStatus(t *testing.T) {
	const bufsz, msg = 8192, 2048
	h := testRing(t, 4, bufsz)
	hs := startReceiver(t, h, ReceiverConfig{Mode: wire.ModeSend, QPs: 1, MsgBytes: msg, StopObservations: 1}, wire.MRWholeRing)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reads := readObservations(t, ctx, h, 1, 4, 0)
	ep, _, _ := connectRaw(t, hs, wire.ModeSend, 1, 4, msg)
	// Slice 0 is fine; slice 1 is one byte longer than its receive WR.
	pattern.Fill(ep.Buffer()[:msg], 4, 0)
	_ = ep.PostSend(0, []fabric.SendWR{{ID: 0, Op: fabric.OpSendImm, Offset: 0, Length: msg, Imm: 0, Signaled: true}, {ID: 1, Op: fabric.OpSendImm, Offset: msg, Length: msg + 1, Imm: 1, Signaled: true}})
	if err := hs.wait(); err != nil {
		t.Fatal(err)
	}
	st := hs.rx.Tracker().Snapshot()
	if st.CompletionErrors != 1 || st.LastObservation == nil || st.LastObservation.Complete ||
		!strings.Contains(st.LastObservation.Message, "IBV_WC_LOC_LEN_ERR") || st.LastObservation.Bytes != msg {
		t.Fatalf("status %+v %+v", st, st.LastObservation)
	}
	if obs := <-reads; len(obs) != 1 || obs[0].bytes != msg || obs[0].err != nil {
		t.Fatalf("reader %+v", obs)
	}
}

func TestWriteSummaryInPlace(t *testing.T) {
	tr := NewTracker()
	tr.Update(func(s *statusdoc.Status) { s.BytesReceived = 42 })
	tr.SetState(statusdoc.StateFinished, "done")
	p := filepath.Join(t.TempDir(), "termination-log")
	if err := os.WriteFile(p, []byte(strings.Repeat("x", 10000)), 0o644); err != nil {
		t.Fatal(err)
	}
	// A bind-mounted file keeps its inode: the summary must be written into it.
	before, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.WriteSummary(p); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(p)
	if !os.SameFile(before, after) {
		t.Fatal("the summary replaced the file instead of writing into it")
	}
	b, _ := os.ReadFile(p)
	var st statusdoc.Status
	if err := json.Unmarshal(b, &st); err != nil || st.BytesReceived != 42 || st.State != statusdoc.StateFinished || st.CompletionTime == "" {
		t.Fatalf("summary %s: %v", b, err)
	}
}

// A pinned sender posts from one CPU and gives its thread back with the CPU
// set it had.
func TestPinnedSenderRestoresCPUSet(t *testing.T) {
	h := testRing(t, 4, 8192)
	hs := startReceiver(t, h, ReceiverConfig{Mode: wire.ModeWrite, QPs: 2, MsgBytes: 2048, StopObservations: 1}, wire.MRWholeRing)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reads := readObservations(t, ctx, h, 1, 13, 0)
	runtime.LockOSThread() // sender.Send runs on this thread: look at it afterwards
	defer runtime.UnlockOSThread()
	var before, after unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}
	res, err := hs.send(ctx, sender.Config{Mode: wire.ModeWrite, QPs: 2, MsgBytes: 2048, Bytes: 50000, Source: sender.PatternSource{Seed: 13}, Pin: sender.PinCurrent})
	if err != nil || !res.Complete {
		t.Fatalf("pinned send: %+v %v", res, err)
	}
	if err := unix.SchedGetaffinity(0, &after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Fatalf("CPU set after a pinned send: %v CPUs, before: %v", after.Count(), before.Count())
	}
	if obs := <-reads; len(obs) != 1 || obs[0].bytes != 50000 || obs[0].mismatches != 0 || obs[0].err != nil {
		t.Fatalf("reader %+v", obs)
	}
}

// A posting thread that cannot be pinned fails the send before anything is
// posted, naming the thread and the CPU; the other threads stop.
func TestPostingThreadOnAMissingCPU(t *testing.T) {
	h := testRing(t, 4, 8192)
	hs := startReceiver(t, h, ReceiverConfig{Mode: wire.ModeSend, QPs: 2, MsgBytes: 2048, StopObservations: 1}, wire.MRWholeRing)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reads := readObservations(t, ctx, h, 1, 3, 0)
	var posts atomic.Int64
	hs.net.Posted = func(int, int) { posts.Add(1) }
	cfg := sender.Config{Mode: wire.ModeSend, QPs: 2, MsgBytes: 2048, Bytes: 50000, Source: sender.PatternSource{Seed: 3}, PostCPUs: []int{testPostCPUs(t)[0], 1 << 16}}
	_, err := hs.send(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), "posting thread 1: pin the posting thread to CPU 65536") || posts.Load() != 0 {
		t.Fatalf("send with a posting thread on CPU 65536: %v (%d posts)", err, posts.Load())
	}
	waitOneObservation(t, hs, reads, 0) // the receiver ends the observation empty
	if st := hs.rx.Tracker().Snapshot(); st.IncompleteObs != 1 {
		t.Fatalf("status %+v", st)
	}
}

// testPostCPUs returns two CPUs this process may run on for posting threads
// (one CPU twice on a single-CPU machine: two threads still).
func testPostCPUs(t *testing.T) []int {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	var cpus []int
	for i := 0; len(cpus) < 2 && i < len(set)*64; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	if len(cpus) == 1 {
		cpus = append(cpus, cpus[0])
	}
	return cpus
}

// With PostCPUs the sender posts from one pinned thread per CPU listed: each
// queue pair from one thread all stream long (queue pair q from thread q mod 2),
// that thread pinned to its CPU, and streams of known length and those a
// --duration cutoff ends (write mode: their owed immediates posted by the
// threads too) arrive whole. Afterwards no thread of the process is left
// pinned.
func TestPostingThreadsKeepEachQueuePairOnItsCPU(t *testing.T) {
	cpus := testPostCPUs(t)
	want := rdmatest.ThreadCPUSets(t)[fmt.Sprintf("/proc/self/task/%d/status", os.Getpid())]
	for _, mode := range []wire.Mode{wire.ModeSend, wire.ModeWrite} {
		t.Run(mode.String(), func(t *testing.T) {
			h := testRing(t, 8, 16384)
			hs := startReceiver(t, h, ReceiverConfig{Mode: mode, QPs: 4, MsgBytes: 1024, StopObservations: 2}, wire.MRPerBlock)
			var mu sync.Mutex
			tids := map[int]map[int]bool{} // queue pair -> posting threads
			var bad []string
			hs.net.Posted = func(qp, _ int) {
				var set unix.CPUSet
				err := unix.SchedGetaffinity(0, &set)
				mu.Lock()
				defer mu.Unlock()
				if tids[qp] == nil {
					tids[qp] = map[int]bool{}
				}
				tids[qp][unix.Gettid()] = true
				if want := cpus[qp%2]; err != nil || set.Count() != 1 || !set.IsSet(want) {
					bad = append(bad, fmt.Sprintf("queue pair %d posted from a thread on %d CPUs, want CPU %d alone (%v)", qp, set.Count(), want, err))
				}
			}
			// Each stream: one thread per queue pair, the same for q and q+2,
			// another for q+1.
			checkThreads := func(stream string) {
				t.Helper()
				mu.Lock()
				defer mu.Unlock()
				if len(bad) > 0 {
					t.Fatalf("%s: %s", stream, bad[0])
				}
				for q := range 4 {
					other := q + 1 - 2*(q%2)
					if len(tids[q]) != 1 || !maps.Equal(tids[q], tids[(q+2)%4]) || maps.Equal(tids[q], tids[other]) {
						t.Fatalf("%s: queue pair %d posted from threads %v, %d from %v, %d from %v", stream, q, tids[q], (q+2)%4, tids[(q+2)%4], other, tids[other])
					}
				}
				clear(tids)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			reads := readObservations(t, ctx, h, 2, 21, 0)
			size := uint64(40*16384 + 777)
			cfg := sender.Config{Mode: mode, QPs: 4, MsgBytes: 1024, Bytes: size, TxDepth: 8, Source: sender.PatternSource{Seed: 21}, PostCPUs: cpus}
			res, err := hs.send(ctx, cfg)
			if err != nil || !res.Complete || res.Bytes != size {
				t.Fatalf("send: %+v %v", res, err)
			}
			checkThreads("stream of known length")
			cfg.Bytes, cfg.Duration, cfg.RateBytesPerSecond = 0, 50*time.Millisecond, 4e6
			res2, err := hs.send(ctx, cfg)
			if err != nil || !res2.Complete || res2.Bytes == 0 {
				t.Fatalf("duration send: %+v %v", res2, err)
			}
			checkThreads("--duration stream")
			waitObservations(t, hs, reads, size, res2.Bytes)
		})
	}
	for task, after := range rdmatest.ThreadCPUSets(t) {
		if after != want {
			t.Errorf("%s may run on CPUs %s after the sends, want %s as before", task, after, want)
		}
	}
}

// A post that fails ends the stream with the error, never a hang: the work
// requests it did not post are not waited for, and the sender and the
// receiver agree on the gap-free prefix that landed (in write mode without
// the slices whose block immediate was never posted), whether the sender
// posts from its own thread or from posting threads.
func TestFailedPostEndsTheStreamOnTheLandedPrefix(t *testing.T) {
	for _, threads := range []string{"one", "threads"} {
		for _, mode := range []wire.Mode{wire.ModeSend, wire.ModeWrite} {
			t.Run(threads+"/"+mode.String(), func(t *testing.T) {
				h := testRing(t, 8, 16384)
				hs := startReceiver(t, h, ReceiverConfig{Mode: mode, QPs: 4, MsgBytes: 1024, StopObservations: 1}, wire.MRWholeRing)
				var posts atomic.Int64
				hs.net.PostErr = func(qp, _ int) error {
					if qp == 1 && posts.Add(1) >= 7 {
						return errors.New("injected post failure")
					}
					return nil
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				reads := readObservations(t, ctx, h, 1, 33, 0)
				cfg := sender.Config{Mode: mode, QPs: 4, MsgBytes: 1024, Bytes: 400 * 16384, TxDepth: 8, Source: sender.PatternSource{Seed: 33}}
				if threads == "threads" {
					cfg.PostCPUs = testPostCPUs(t)
				}
				res, err := hs.send(ctx, cfg)
				if err == nil || !strings.Contains(err.Error(), "on queue pair 1: injected post failure") || res.Complete {
					t.Fatalf("send: %+v %v", res, err)
				}
				if res.Bytes == 0 || res.Bytes >= cfg.Bytes || res.Receiver.Bytes != res.Bytes || res.Receiver.OK ||
					!strings.HasPrefix(res.Receiver.Message, "sender stopped early") {
					t.Fatalf("send result %+v: want a prefix the receiver agrees on", res)
				}
				waitOneObservation(t, hs, reads, res.Bytes)
				if st := hs.rx.Tracker().Snapshot(); st.IncompleteObs != 1 {
					t.Fatalf("status %+v", st)
				}
			})
		}
	}
}

// A sender told nothing of the link takes the receiver's mode, queue pairs and
// message size from its Settings; one told otherwise is refused before it
// creates anything, naming both.
func TestSenderTakesTheReceiversSettings(t *testing.T) {
	h := testRing(t, 4, 8192)
	hs := startReceiver(t, h, ReceiverConfig{Mode: wire.ModeWrite, QPs: 3, MsgBytes: 2048, StopObservations: 1}, wire.MRWholeRing)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reads := readObservations(t, ctx, h, 1, 21, 0)

	_, _, err := sender.Connect(ctx, hs.addr, sender.Config{QPs: 2, Bytes: 1, Source: sender.PatternSource{Seed: 21}})
	if err == nil || !strings.Contains(err.Error(), "the receiver uses 3 queue pairs, this sender asked for 2") {
		t.Fatalf("sender asking for 2 queue pairs: %v", err)
	}
	l, cfg, err := sender.Connect(ctx, hs.addr, sender.Config{Bytes: 50000, Source: sender.PatternSource{Seed: 21}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	if cfg.Mode != wire.ModeWrite || cfg.QPs != 3 || cfg.MsgBytes != 2048 {
		t.Fatalf("sender took %s mode, %d queue pairs, %d-byte messages; want the receiver's write, 3, 2048", cfg.Mode, cfg.QPs, cfg.MsgBytes)
	}
	res, err := l.Stream(ctx, cfg, memfabric.NewSender(hs.net, make([]byte, sender.SendBufferBytes(cfg))))
	if err != nil || !res.Complete || res.QPs != 3 || res.Mode != wire.ModeWrite {
		t.Fatalf("stream: %+v %v", res, err)
	}
	if obs := <-reads; len(obs) != 1 || obs[0].bytes != 50000 || obs[0].mismatches != 0 || obs[0].err != nil {
		t.Fatalf("reader %+v", obs)
	}
}
