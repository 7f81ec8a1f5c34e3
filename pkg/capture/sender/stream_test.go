package sender

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/memfabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/pattern"
)

// fakeReceiver is the receiver's half of the protocol over the in-memory
// fabric, with a ring big enough for the whole stream: it grants every block
// (write mode) or every receive (send mode) at once, and answers the End with
// a Done for the bytes the sender says it sent.
type fakeReceiver struct {
	net    *memfabric.Net
	g      wire.Geometry
	mode   wire.Mode
	total  uint64
	blocks [][]byte
	addr   string
	end    chan wire.End
	errs   chan error
}

func startFakeReceiver(t *testing.T, mode wire.Mode, qps int, blockBytes, msgBytes, total uint64) *fakeReceiver {
	t.Helper()
	g := wire.Geometry{BlockBytes: blockBytes, MsgBytes: msgBytes, QPs: qps, WholeBlocks: mode.WholeBlocks()}
	g.NBufs = int((total + blockBytes - 1) / blockBytes)
	r := &fakeReceiver{net: memfabric.NewNet(), g: g, mode: mode, total: total, end: make(chan wire.End, 1), errs: make(chan error, 1)}
	for range g.NBufs {
		r.blocks = append(r.blocks, make([]byte, blockBytes))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	r.addr = ln.Addr().String()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			defer func() { _ = c.Close() }()
			err = r.serve(wire.NewConn(c))
		}
		r.errs <- err
	}()
	return r
}

// serve answers one sender.
func (r *fakeReceiver) serve(k *wire.Conn) error {
	if _, err := k.ReadPreamble(); err != nil {
		return fmt.Errorf("read preamble: %w", err)
	}
	fab := memfabric.NewReceiver(r.net, r.blocks, wire.MRWholeRing)
	if err := k.Send(wire.Settings{Mode: r.mode, QPs: uint16(r.g.QPs), MsgBytes: uint32(r.g.MsgBytes), Fabric: fab.Fabric()}); err != nil {
		return err
	}
	m, err := k.Recv()
	if err != nil {
		return fmt.Errorf("read hello: %w", err)
	}
	hello := m.(wire.Hello)
	ep, _ := fab.Open(context.Background(), fabric.EndpointConfig{QPs: r.g.QPs, SendDepth: 1, RecvDepth: int(r.g.Slices(r.total)) + r.g.NBufs})
	defer func() { _ = ep.Close() }()
	mr, regions, _ := fab.Registration()
	acc := wire.Accept{Mode: r.mode, MsgBytes: uint32(r.g.MsgBytes), NBufs: uint32(r.g.NBufs), BufSize: r.g.BlockBytes, MRMode: mr, Fabric: fab.Fabric(), QPs: ep.Local()}
	if r.mode == wire.ModeWrite {
		acc.Regions = regions
	}
	if err := r.postReceives(ep); err != nil {
		return err
	}
	if err := k.Send(acc); err != nil {
		return err
	}
	if err := ep.Connect(hello.QPs); err != nil {
		return err
	}
	if err := r.grant(k); err != nil {
		return err
	}
	return r.awaitEnd(k)
}

// postReceives posts a receive for every slice (send mode: where it lands)
// or every immediate a block can bring (write mode).
func (r *fakeReceiver) postReceives(ep fabric.Endpoint) error {
	if r.mode == wire.ModeWrite {
		for q := range r.g.QPs {
			if err := ep.PostRecv(q, make([]fabric.RecvWR, r.g.NBufs)); err != nil {
				return err
			}
		}
		return nil
	}
	for sl := range r.g.Slices(r.total) {
		seq, off, length := r.g.Slice(sl)
		if err := ep.PostRecv(r.g.QP(sl), []fabric.RecvWR{{ID: sl, Block: int(seq), Offset: off, Length: length}}); err != nil {
			return err
		}
	}
	return nil
}

// grant grants every block (write mode) or every receive (send mode).
func (r *fakeReceiver) grant(k *wire.Conn) error {
	if r.mode == wire.ModeWrite {
		for i := range r.g.NBufs {
			if err := k.Send(wire.Credit{Seq: uint64(i), Index: uint32(i)}); err != nil {
				return err
			}
		}
		return nil
	}
	for q := range r.g.QPs {
		if err := k.Send(wire.Posted{QP: uint16(q), Upto: r.g.Slices(r.total) + uint64(r.g.QPs)}); err != nil {
			return err
		}
	}
	return nil
}

// awaitEnd reads the sender's End and confirms it.
func (r *fakeReceiver) awaitEnd(k *wire.Conn) error {
	m, err := k.Recv()
	if err != nil {
		return fmt.Errorf("read end: %w", err)
	}
	end, ok := m.(wire.End)
	if !ok {
		return fmt.Errorf("got %T, want the end of the stream", m)
	}
	r.end <- end
	if err := k.Send(wire.Done{Bytes: end.Bytes, Blocks: uint64(r.g.NBufs), OK: true}); err != nil {
		return err
	}
	_, _ = k.Recv() // until the sender closes
	return nil
}

// landed is the stream as it landed in the ring.
func (r *fakeReceiver) landed() []byte { return bytes.Join(r.blocks, nil)[:r.total] }

// shortReader hands out at most n bytes a read, as a pipe does.
type shortReader struct {
	r io.Reader
	n int
}

func (s shortReader) Read(p []byte) (int, error) { return s.r.Read(p[:min(len(p), s.n)]) }

// The sender streams to a receiver over the in-memory fabric, in both modes,
// from a random-access source (queue pairs run on their own) and from a
// reader (strict slice order), a work request a post or all at once: every
// byte lands where the geometry puts it, and the receiver's account
// completes the stream.
func TestStreamOverMemfabric(t *testing.T) {
	const seed, block, msg, total = 11, 64 << 10, 8 << 10, 5*(64<<10) - 1234
	want := make([]byte, total)
	pattern.Fill(want, seed, 0)
	for _, c := range []struct {
		mode     wire.Mode
		reader   bool
		postList int
		threads  bool // posting threads (goroutine posters)
	}{
		{wire.ModeWrite, false, 0, false},
		{wire.ModeWrite, true, 0, false},
		{wire.ModeWrite, false, 1, false},
		{wire.ModeWrite, false, 0, true},
		{wire.ModeSend, false, 0, false},
		{wire.ModeSend, true, 0, false},
		{wire.ModeSend, false, 1, false},
		{wire.ModeSend, false, 0, true},
	} {
		t.Run(fmt.Sprintf("%s/reader=%v/postList=%d/threads=%v", c.mode, c.reader, c.postList, c.threads), func(t *testing.T) {
			r := startFakeReceiver(t, c.mode, 3, block, msg, total)
			cfg := Config{Bytes: total, TxDepth: 4, PostList: c.postList, Source: PatternSource{Seed: seed}, DoneTimeout: 10 * time.Second}
			if c.reader { // the length is the reader's
				cfg.Bytes, cfg.Source = 0, ReaderSource{R: shortReader{bytes.NewReader(want), 3000}}
			}
			if c.threads {
				cfg.PostCPUs = postingCPUs(t)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			buf := make([]byte, 3*4*msg)
			res, err := Send(ctx, r.addr, cfg, memfabric.NewSender(r.net, buf))
			if err != nil {
				t.Fatalf("send: %v", err)
			}
			if err := <-r.errs; err != nil {
				t.Fatalf("receiver: %v", err)
			}
			if end := <-r.end; end.Bytes != total || !end.Complete {
				t.Errorf("end of stream %+v, want %d bytes, complete", end, total)
			}
			if !res.Complete || res.Bytes != total || res.QPs != 3 || res.Mode != c.mode {
				t.Errorf("result %+v", res)
			}
			if !bytes.Equal(r.landed(), want) {
				t.Error("the ring does not hold the stream")
			}
		})
	}
}

// postingCPUs is two CPUs for posting threads, skipping the test when the
// process may run on fewer.
func postingCPUs(t *testing.T) []int {
	cpus, err := AllowedCPUs()
	if err != nil || len(cpus) < 2 {
		t.Skipf("posting threads need two CPUs: %v, %v", cpus, err)
	}
	return cpus[:2]
}

// A rate limit holds the stream back: at 8 MB/s, 1 MB takes about 125 ms.
func TestStreamRateLimited(t *testing.T) {
	const total = 1 << 20
	r := startFakeReceiver(t, wire.ModeWrite, 2, 256<<10, 16<<10, total)
	cfg := Config{Bytes: total, TxDepth: 4, Source: NoFillSource{}, RateBytesPerSecond: 8e6}
	start := time.Now()
	res, err := Send(context.Background(), r.addr, cfg, memfabric.NewSender(r.net, make([]byte, 2*4*16<<10)))
	if err != nil || !res.Complete {
		t.Fatalf("send: %+v, %v", res, err)
	}
	// The last slice is due (total - a slice) / rate after the start.
	if el := time.Since(start); el < 120*time.Millisecond {
		t.Errorf("1 MiB at 8 MB/s took %v, want at least 120 ms", el)
	}
	if err := <-r.errs; err != nil {
		t.Fatalf("receiver: %v", err)
	}
}

// A post that fails ends the stream: the sender reports it, marks the end
// incomplete and counts only the gap-free prefix, which has landed.
func TestStreamPostFails(t *testing.T) {
	const seed, block, msg, total = 5, 64 << 10, 8 << 10, 6 * (64 << 10)
	want := make([]byte, total)
	pattern.Fill(want, seed, 0)
	for _, mode := range []wire.Mode{wire.ModeWrite, wire.ModeSend} {
		t.Run(mode.String(), func(t *testing.T) {
			r := startFakeReceiver(t, mode, 2, block, msg, total)
			var posts atomic.Int64
			r.net.PostErr = func(qp, n int) error {
				if posts.Add(1) == 7 {
					return errors.New("injected post failure")
				}
				return nil
			}
			cfg := Config{Bytes: total, TxDepth: 4, PostList: 1, Source: PatternSource{Seed: seed}, DoneTimeout: 10 * time.Second}
			res, err := Send(context.Background(), r.addr, cfg, memfabric.NewSender(r.net, make([]byte, 2*4*msg)))
			if err == nil || !strings.Contains(err.Error(), "injected post failure") {
				t.Fatalf("send: %v, want the post's failure", err)
			}
			if rerr := <-r.errs; rerr != nil {
				t.Fatalf("receiver: %v", rerr)
			}
			if end := <-r.end; end.Complete {
				t.Errorf("end of stream %+v, want incomplete", end)
			}
			if res.Complete || res.Bytes >= total || !bytes.Equal(r.landed()[:res.Bytes], want[:res.Bytes]) {
				t.Errorf("result %+v: want an incomplete prefix that landed", res)
			}
		})
	}
}
