//go:build headroom

package benchfabric_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/benchstat"
	"github.com/ringcap/ringcap/internal/ipctest"
	"github.com/ringcap/ringcap/pkg/capture"
	"github.com/ringcap/ringcap/pkg/capture/benchfabric"
	"github.com/ringcap/ringcap/pkg/capture/sender"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/dada"
)

// The headroom benchmarks of `make bench-headroom` (issue 38): what one core
// of ringcap's engines sustains against a fabric that costs nothing
// (benchfabric), as a multiple of a 400 Gb/s link's message or block rate.
// Each figure is the median of headroomRuns runs of testing.Benchmark, with
// the lowest and highest run as its interval; one line per figure.
//
// The engine, its ring writer, the ring's reader (which releases each block at
// once) and the test peer on the TCP connection (handshake, credits, End,
// Done) all run in this process: pinned to one CPU (the make target does, with
// GOMAXPROCS=2), every figure includes their cost too.

const (
	headroomRuns = 7
	lineBits     = 400e9
)

var sizes = []uint64{8 << 10, 64 << 10, 1 << 20}

func sizeName(n uint64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// sample is one testing.Benchmark run: wall time and the process's CPU time
// (user+sys of every thread, over the final run of the benchmark) per op. On a
// core shared with other work the CPU time counts only what this process
// spent.
type sample struct{ wall, cpu float64 }

// measure runs fn once through testing.Benchmark.
func measure(t *testing.T, name string, fn func(b *testing.B)) sample {
	t.Helper()
	var cpu float64
	r := testing.Benchmark(func(b *testing.B) {
		c, err := benchstat.Measure(func() error { fn(b); return nil })
		if err != nil {
			b.Fatalf("measure %s: %v", name, err)
		}
		cpu = c.Per(b.N).CPU
	})
	if r.N == 0 {
		t.Fatalf("%s: the benchmark failed", name)
	}
	return sample{wall: float64(r.T.Nanoseconds()) / float64(r.N), cpu: cpu}
}

// printFigure prints one figure's line: ns per op and the headroom (ops per
// second over the line's rate of ops of opBytes), from wall time and from CPU
// time (cpu-headroom), each the median of the runs with their range.
func printFigure(name string, opBytes uint64, runs []sample) {
	ns, cpu := make([]float64, len(runs)), make([]float64, len(runs))
	for i, r := range runs {
		ns[i], cpu[i] = r.wall, r.cpu
	}
	slices.Sort(ns)
	slices.Sort(cpu)
	line := lineBits / 8 / float64(opBytes)
	hr := func(v float64) float64 { return 1e9 / v / line }
	m := len(ns) / 2
	fmt.Printf("headroom %s@400G=%.2f [%.2f, %.2f]  ns/op=%.0f [%.0f, %.0f]  cpu-headroom=%.2f [%.2f, %.2f]  cpu-ns/op=%.0f [%.0f, %.0f]  op/s=%.0f  (median of %d runs, GOMAXPROCS=%d)\n",
		name, hr(ns[m]), hr(ns[len(ns)-1]), hr(ns[0]), ns[m], ns[0], ns[len(ns)-1],
		hr(cpu[m]), hr(cpu[len(cpu)-1]), hr(cpu[0]), cpu[m], cpu[0], cpu[len(cpu)-1], 1e9/ns[m], len(ns), runtime.GOMAXPROCS(0))
}

// figure runs fn headroomRuns times, as a subtest of its own name, and prints
// its line.
func figure(t *testing.T, name string, opBytes uint64, fn func(b *testing.B)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		var runs []sample
		for range headroomRuns {
			runs = append(runs, measure(t, name, fn))
		}
		printFigure(name, opBytes, runs)
	})
}

// floorFigure runs fn and its floor in turn headroomRuns times, prints both
// lines and `ratio NAME/FLOOR=` of their CPU time per op: the median of the
// per-round ratios with their range.
func floorFigure(t *testing.T, name, floorName string, opBytes uint64, fn, floor func(b *testing.B)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		var runs, floors []sample
		var ratios []float64
		for range headroomRuns {
			r, f := measure(t, name, fn), measure(t, floorName, floor)
			runs, floors, ratios = append(runs, r), append(floors, f), append(ratios, r.cpu/f.cpu)
		}
		printFigure(name, opBytes, runs)
		printFigure(floorName, opBytes, floors)
		slices.Sort(ratios)
		fmt.Printf("ratio %s/%s=%.2f [%.2f, %.2f]  (CPU time per op, median of %d rounds, GOMAXPROCS=%d)\n",
			name, floorName, ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1], len(ratios), runtime.GOMAXPROCS(0))
	})
}

// TestHeadroom runs every figure; -run 'TestHeadroom/recv-send' picks a group,
// -run 'TestHeadroom/recv-send/recv-send-8KiB-qps4' one figure.
func TestHeadroom(t *testing.T) {
	t.Run("recv-send", func(t *testing.T) {
		for _, msg := range sizes {
			for _, qps := range []int{1, 4, 16} {
				rig := newRxRig(t, wire.ModeSend, qps, msg, 4<<20, 8)
				figure(t, fmt.Sprintf("recv-send-%s-qps%d", sizeName(msg), qps), msg, rig.observe)
				rig.close(t)
			}
		}
	})
	t.Run("recv-write", func(t *testing.T) {
		for _, block := range []uint64{1 << 20, 16 << 20} {
			rig := newRxRig(t, wire.ModeWrite, 4, 1<<20, block, 8)
			floor := newRingFloor(t, block, 8)
			floorFigure(t, fmt.Sprintf("recv-write-%s-qps4", sizeName(block)), fmt.Sprintf("ring-floor-%s", sizeName(block)),
				block, rig.observe, floor.observe)
			floor.close(t)
			rig.close(t)
		}
	})
	t.Run("send-send", func(t *testing.T) {
		for _, msg := range sizes {
			for _, qps := range []int{1, 4, 16} {
				rig := newTxRig(t, wire.ModeSend, qps, msg, 4<<20, 8)
				figure(t, fmt.Sprintf("send-send-%s-qps%d", sizeName(msg), qps), msg, rig.stream)
				rig.close(t)
			}
		}
	})
	t.Run("send-write", func(t *testing.T) {
		for _, block := range []uint64{1 << 20, 16 << 20} {
			rig := newTxRig(t, wire.ModeWrite, 4, 1<<20, block, 8)
			figure(t, fmt.Sprintf("send-write-%s-qps4", sizeName(block)), block, rig.stream)
			rig.close(t)
		}
	})
}

// ringKeys: a band of 16 high values of their own (0x7a00..0x7dff), stepping by 2
// (key+1 is the header ring); keys another process holds are skipped.
var ringKeys = ipctest.NewKeys(0x7a00, 0x40, 0x10, 0x100)

func createRing(t *testing.T, nbufs, bufSize uint64) *dada.HDU {
	t.Helper()
	cfg := dada.DefaultConfig()
	cfg.NBufs, cfg.BufSize, cfg.Readers = nbufs, bufSize, 1
	for range 64 {
		cfg.Key = dada.Key(ringKeys.Next())
		h, err := dada.Create(cfg)
		if err == nil {
			return h
		}
		if !errors.Is(err, dada.ErrRingExists) {
			t.Fatalf("create ring %s: %v", cfg.Key, err)
		}
	}
	t.Fatal("no free ring key")
	return nil
}

// rxRig is a receiver serving on a real ring through the benchmark fabric,
// with a reader releasing each block at once.
type rxRig struct {
	mode       wire.Mode
	qps        int
	msg, block uint64
	h          *dada.HDU
	w          *dada.Writer
	fab        *benchfabric.Receiver
	addr       string
	cancel     context.CancelFunc
	served     chan error
	read       chan error
	closed     bool
}

func newRxRig(t *testing.T, mode wire.Mode, qps int, msg, block, nbufs uint64) *rxRig {
	t.Helper()
	rig := &rxRig{mode: mode, qps: qps, msg: msg, block: block, h: createRing(t, nbufs, block),
		fab: benchfabric.NewReceiver(mode, nbufs, block, msg), served: make(chan error, 1), read: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	rig.cancel = cancel
	var err error
	if rig.w, err = rig.h.LockWrite(ctx, dada.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := capture.ReceiverConfig{Mode: mode, QPs: qps, MsgBytes: msg, BusyPoll: true,
		Header: capture.ObservationHeaders{Template: []byte("HDR_VERSION 1.0\n"), Size: 4096}}
	rx, err := capture.NewReceiver(cfg, capture.RingGeometryOf(rig.h.Data), capture.DadaWriter{W: rig.w}, rig.fab, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rig.addr = ln.Addr().String()
	go func() { rig.served <- rx.Serve(ctx, ln) }()
	go func() { rig.read <- releaseBlocks(ctx, rig.h) }()
	t.Cleanup(func() { rig.close(t) }) // when a figure fails before its close
	return rig
}

// releaseBlocks reads observations from the ring, releasing each block as
// soon as it is full, until ctx is cancelled.
func releaseBlocks(ctx context.Context, h *dada.HDU) error {
	r, err := h.LockRead(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	for {
		if _, err := r.ReadHeader(ctx); err != nil {
			return err
		}
		for {
			_, err := r.NextBlock(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			if err := r.MarkCleared(); err != nil {
				return err
			}
		}
		if err := r.Reset(); err != nil {
			return err
		}
	}
}

// observe streams one observation of b.N messages (send mode) or blocks
// (write mode) into the receiver, as a sender whose data the fabric makes
// land: it only speaks the handshake, reports grants to the fabric and
// checks the receiver's Done.
func (rig *rxRig) observe(b *testing.B) {
	total := uint64(b.N) * rig.msg
	if rig.mode == wire.ModeWrite {
		total = uint64(b.N) * rig.block
	}
	c, err := dialBlocking(rig.addr)
	if err != nil {
		die(b, err)
	}
	defer func() { _ = c.Close() }()
	k := wire.NewConn(c)
	qps := make([]wire.QPInfo, rig.qps)
	for i := range qps {
		qps[i] = wire.QPInfo{QPN: uint32(3000 + i), MTU: 4096}
	}
	if err := k.WritePreamble(); err != nil {
		die(b, err)
	}
	if m, err := k.Recv(); err != nil {
		die(b, err)
	} else if _, ok := m.(wire.Settings); !ok {
		dief(b, "expected the receiver's Settings, got %T", m)
	}
	if err := k.Send(wire.Hello{Mode: rig.mode, MsgBytes: uint32(rig.msg), TotalBytes: total, Fabric: wire.Fabric{Transport: wire.TransportVerbs}, QPs: qps}); err != nil {
		die(b, err)
	}
	if err := awaitAccept(k); err != nil {
		die(b, err)
	}
	if err := k.Send(wire.End{Bytes: total, Complete: true}); err != nil {
		die(b, err)
	}
	for {
		m, err := k.Recv()
		if err != nil {
			die(b, err)
		}
		switch m := m.(type) {
		case wire.Credit:
			if m.Seq < uint64(b.N) { // the sender writes no block past the end
				rig.fab.Grant(m.Seq)
			}
		case wire.Held:
		case wire.Posted: // send mode: the bench fabric fills each receive as it is posted
		case wire.Done:
			if !m.OK || m.Bytes != total {
				dief(b, "receiver's Done: %+v, want %d bytes", m, total)
			}
			return
		default:
			dief(b, "unexpected %T", m)
		}
	}
}

// blockingConn reads with blocking system calls (a copy of the socket in
// blocking mode) and writes through the net.Conn. While busy-polling loops
// keep every P busy the scheduler never idles, and a goroutine waiting in the
// network poller runs only when sysmon polls the network (a millisecond or
// more later): the peer would see write-mode credits late, measuring the
// benchmark's peer instead of the engine (a real sender is another machine).
// A blocking read returns on its own thread and queues the peer at once.
type blockingConn struct {
	net.Conn
	f *os.File
}

func (c blockingConn) Read(p []byte) (int, error) { return c.f.Read(p) }

func (c blockingConn) Close() error { return errors.Join(c.f.Close(), c.Conn.Close()) }

// yieldingConn reads without blocking, yielding the P between tries: with
// GOMAXPROCS=1 a blocking read would hold the only P until sysmon takes it
// back, stalling the engine for that long per credit (a cost of the
// benchmark's peer, not the engine: a real sender is another machine).
type yieldingConn struct {
	net.Conn
	rc syscall.RawConn
}

func (c yieldingConn) Read(p []byte) (n int, err error) {
	rerr := c.rc.Read(func(fd uintptr) bool {
		for {
			n, err = syscall.Read(int(fd), p)
			if err != syscall.EAGAIN && err != syscall.EINTR {
				return true
			}
			runtime.Gosched()
		}
	})
	switch {
	case rerr != nil:
		return 0, rerr
	case err != nil:
		return 0, err
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return n, nil
}

// dialBlocking connects the peer: with GOMAXPROCS=1 through a yieldingConn,
// else a blockingConn.
func dialBlocking(addr string) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	if runtime.GOMAXPROCS(0) == 1 {
		rc, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		return yieldingConn{Conn: c, rc: rc}, nil
	}
	f, err := c.(*net.TCPConn).File()
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	f.Fd() // puts the copy into blocking mode
	return blockingConn{Conn: c, f: f}, nil
}

func awaitAccept(k *wire.Conn) error {
	for {
		m, err := k.Recv()
		if err != nil {
			return err
		}
		switch m := m.(type) {
		case wire.Accept:
			return nil
		case wire.Held:
		case wire.Reject:
			return errors.New(m.Message)
		default:
			return fmt.Errorf("unexpected %T", m)
		}
	}
}

// close stops the receiver and the reader and destroys the ring; idempotent.
func (rig *rxRig) close(t *testing.T) {
	t.Helper()
	if rig.closed {
		return
	}
	rig.closed = true
	rig.cancel()
	if err := <-rig.served; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("receiver: %v", err)
	}
	if err := <-rig.read; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("reader: %v", err)
	}
	if err := rig.w.Close(); err != nil {
		t.Errorf("close writer: %v", err)
	}
	if err := rig.h.Destroy(); err != nil {
		t.Errorf("destroy ring: %v", err)
	}
}

// ringFloor is the floor of any writer of a PSRDADA ring in the receiver
// rig's arrangement: the same ring geometry and the same reader releasing each
// block at once (releaseBlocks, its own goroutine), and a writer that does
// nothing per block but what the ring's contract requires (open the next block,
// waiting for the reader to clear it, and mark it filled: two of the four
// semaphore operations, the reader making the other two). No engine, no fabric,
// no credits.
type ringFloor struct {
	h      *dada.HDU
	w      *dada.Writer
	bufsz  int
	cancel context.CancelFunc
	read   chan error
	closed bool
}

func newRingFloor(t *testing.T, block, nbufs uint64) *ringFloor {
	t.Helper()
	f := &ringFloor{h: createRing(t, nbufs, block), bufsz: int(block), read: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	var err error
	if f.w, err = f.h.LockWrite(ctx, dada.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	go func() { f.read <- releaseBlocks(ctx, f.h) }()
	t.Cleanup(func() { f.close(t) })
	return f
}

// observe writes one observation of b.N blocks: a header, then each block
// opened and marked filled, the last one with the end of data.
func (f *ringFloor) observe(b *testing.B) {
	ctx := context.Background()
	if err := f.w.WriteHeaderContext(ctx, []byte("HDR_VERSION 1.0\n")); err != nil {
		die(b, err)
	}
	for i := range b.N {
		if _, err := f.w.OpenBlock(ctx); err != nil {
			die(b, err)
		}
		mark := f.w.MarkFilled
		if i == b.N-1 {
			mark = f.w.MarkFilledEOD
		}
		if err := mark(f.bufsz); err != nil {
			die(b, err)
		}
	}
}

// close stops the reader and destroys the ring; idempotent.
func (f *ringFloor) close(t *testing.T) {
	t.Helper()
	if f.closed {
		return
	}
	f.closed = true
	f.cancel()
	if err := <-f.read; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("reader: %v", err)
	}
	if err := f.w.Close(); err != nil {
		t.Errorf("close writer: %v", err)
	}
	if err := f.h.Destroy(); err != nil {
		t.Errorf("destroy ring: %v", err)
	}
}

// txRig is a test peer playing the receiver for the sender engine over the
// benchmark fabric: it accepts, grants ring blocks (write mode) as the
// sender's blocks land, and answers End with Done.
type txRig struct {
	mode       wire.Mode
	qps        int
	msg, block uint64
	nbufs      uint64
	ln         net.Listener
}

func newTxRig(t *testing.T, mode wire.Mode, qps int, msg, block, nbufs uint64) *txRig {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &txRig{mode: mode, qps: qps, msg: msg, block: block, nbufs: nbufs, ln: ln}
}

// stream sends one stream of b.N messages (send mode) or blocks (write mode).
func (rig *txRig) stream(b *testing.B) {
	total := uint64(b.N) * rig.msg
	if rig.mode == wire.ModeWrite {
		total = uint64(b.N) * rig.block
	}
	cfg := sender.Config{Mode: rig.mode, QPs: rig.qps, MsgBytes: rig.msg, Bytes: total, Source: sender.NoFillSource{}, BusyPoll: true}
	fab := benchfabric.NewSender(make([]byte, sender.SendBufferBytes(cfg)))
	peer := make(chan error, 1)
	go func() { peer <- rig.serve(fab, total) }()
	res, err := sender.Send(context.Background(), rig.ln.Addr().String(), cfg, fab)
	if err != nil {
		die(b, err)
	}
	if err := <-peer; err != nil {
		die(b, err)
	}
	if res.Bytes != total {
		dief(b, "sent %d bytes, want %d", res.Bytes, total)
	}
}

// serve is the peer's side of one stream.
func (rig *txRig) serve(fab *benchfabric.Sender, total uint64) error {
	c, err := rig.ln.Accept()
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	k := wire.NewConn(c)
	if _, err := k.ReadPreamble(); err != nil {
		return err
	}
	if err := k.Send(wire.Settings{Mode: rig.mode, QPs: uint16(rig.qps), MsgBytes: uint32(rig.msg), Fabric: wire.Fabric{Transport: wire.TransportVerbs}}); err != nil {
		return err
	}
	m, err := k.Recv()
	if err != nil {
		return err
	}
	hello, ok := m.(wire.Hello)
	if !ok {
		return fmt.Errorf("expected a hello, got %T", m)
	}
	qps := make([]wire.QPInfo, len(hello.QPs))
	for i := range qps {
		qps[i] = wire.QPInfo{QPN: uint32(4000 + i), MTU: 4096}
	}
	acc := wire.Accept{Mode: rig.mode, MsgBytes: uint32(rig.msg), NBufs: uint32(rig.nbufs), BufSize: rig.block, MRMode: wire.MRWholeRing, Fabric: wire.Fabric{Transport: wire.TransportVerbs}, QPs: qps}
	if rig.mode == wire.ModeWrite {
		acc.Regions = []wire.Region{{Addr: 0x10000000, Len: rig.nbufs * rig.block, RKey: 1}}
	}
	if err := k.Send(acc); err != nil {
		return err
	}
	if rig.mode == wire.ModeSend {
		// Send mode: the bench fabric takes every SEND, as if every receive
		// were posted; grant them all up front.
		for q := range qps {
			if err := k.QueuePosted(wire.Posted{QP: uint16(q), Upto: math.MaxUint64}); err != nil {
				return err
			}
		}
		if err := k.Flush(); err != nil {
			return err
		}
	}
	ends := make(chan wire.End, 1)
	errc := make(chan error, 1)
	go func() {
		m, err := k.Recv()
		if err != nil {
			errc <- err
			return
		}
		end, ok := m.(wire.End)
		if !ok {
			errc <- fmt.Errorf("expected End, got %T", m)
			return
		}
		ends <- end
	}()
	blocks := (total + rig.block - 1) / rig.block
	granted := uint64(0)
	for {
		// Write mode: keep nbufs blocks granted ahead of those landed. The credits
		// of one pass go out in one write, as ringcap's receiver sends those of
		// the blocks that came free together.
		queued := false
		for rig.mode == wire.ModeWrite && granted < blocks && granted < fab.WriteImms()+rig.nbufs {
			if err := k.QueueCredit(wire.Credit{Seq: granted, Index: uint32(granted % rig.nbufs)}); err != nil {
				return err
			}
			granted++
			queued = true
		}
		if queued {
			if err := k.Flush(); err != nil {
				return err
			}
		}
		select {
		case <-fab.Landed():
		case end := <-ends:
			return k.Send(wire.Done{Bytes: end.Bytes, Blocks: blocks, OK: true})
		case err := <-errc:
			return err
		case <-time.After(10 * time.Second):
			return errors.New("no progress for 10 s")
		}
	}
}

func (rig *txRig) close(t *testing.T) {
	t.Helper()
	if err := rig.ln.Close(); err != nil {
		t.Errorf("close listener: %v", err)
	}
}

// die and dief print why a benchmark failed (testing.Benchmark keeps a
// benchmark's own log to itself) and stop it.
func die(b *testing.B, args ...any) {
	b.Helper()
	fmt.Fprintln(os.Stderr, append([]any{b.Name() + ":"}, args...)...)
	b.FailNow()
}

func dief(b *testing.B, format string, args ...any) {
	b.Helper()
	fmt.Fprintf(os.Stderr, b.Name()+": "+format+"\n", args...)
	b.FailNow()
}
