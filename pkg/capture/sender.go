package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"time"

	"github.com/ringcap/ringcap/pkg/pattern"
)

// Source produces the stream. Fill writes the stream bytes starting at
// offset into dst and returns how many it wrote; fewer than len(dst) means
// the stream ends there. Offsets are asked for in increasing order.
type Source interface {
	Fill(dst []byte, offset uint64) (int, error)
}

// PatternSource is the deterministic test stream of pkg/pattern, which any
// reader can verify (`ringcap ring read --verify SEED`).
type PatternSource struct{ Seed uint64 }

// Fill implements Source.
func (p PatternSource) Fill(dst []byte, offset uint64) (int, error) {
	pattern.Fill(dst, p.Seed, offset)
	return len(dst), nil
}

// ReaderSource streams a file or any reader, in order.
type ReaderSource struct{ R io.Reader }

// Fill implements Source.
func (f ReaderSource) Fill(dst []byte, _ uint64) (int, error) {
	n, err := io.ReadFull(f.R, dst)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil
	}
	return n, err
}

// NoFillSource leaves the send buffers as they are (zeros), as perftest does:
// for benchmarks that measure the transport, not the data generator.
type NoFillSource struct{}

// Fill implements Source.
func (NoFillSource) Fill(dst []byte, _ uint64) (int, error) { return len(dst), nil }

// SenderConfig configures Send.
type SenderConfig struct {
	Mode     Mode
	QPs      int
	MsgBytes uint64
	TxDepth  int // send WRs in flight per queue pair (default 16)
	// Bytes is the stream length (0: until Duration or the end of Source).
	Bytes    uint64
	Duration time.Duration
	Source   Source
	// RateBytesPerSecond limits the send rate (0: unlimited).
	RateBytesPerSecond float64
	// Progress is called about every ProgressEvery with the running totals.
	Progress      func(Progress)
	ProgressEvery time.Duration
	DialTimeout   time.Duration
	// DoneTimeout bounds the wait for the receiver's final word (default 60 s).
	DoneTimeout time.Duration
	Log         *slog.Logger
}

// Progress is a running total of a send.
type Progress struct {
	Bytes    uint64
	Total    uint64 // 0 when unknown
	Elapsed  time.Duration
	HeldBack time.Duration
}

// Result is the outcome of Send.
type Result struct {
	Bytes           uint64
	Seconds         float64
	Gbps            float64
	QPs             int
	Mode            Mode
	MRMode          MRMode
	HeldBackSeconds float64
	Complete        bool
	Receiver        Done // the receiver's account of the observation
}

// RejectedError is returned when the receiver refused the connection.
type RejectedError struct{ Message string }

func (e *RejectedError) Error() string { return "receiver refused the connection: " + e.Message }

// Validate checks the configuration.
func (c SenderConfig) Validate() error {
	if err := validateLink(c.Mode, c.QPs, c.MsgBytes); err != nil {
		return err
	}
	switch {
	case c.Source == nil:
		return errors.New("no data source")
	case c.Bytes == 0 && c.Duration <= 0:
		if _, ok := c.Source.(ReaderSource); !ok {
			return errors.New("give --bytes or --duration")
		}
	}
	return nil
}

func (c *SenderConfig) defaults() {
	if c.TxDepth == 0 {
		c.TxDepth = 16
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = 10 * time.Second
	}
	if c.DoneTimeout == 0 {
		c.DoneTimeout = 60 * time.Second
	}
	if c.ProgressEvery == 0 {
		c.ProgressEvery = time.Second
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
}

// SendBufferBytes is the registered send buffer Send needs for cfg.
func SendBufferBytes(cfg SenderConfig) uint64 {
	cfg.defaults()
	return uint64(cfg.QPs) * uint64(cfg.TxDepth) * cfg.MsgBytes
}

// Send connects to a receiver at addr and streams cfg.Source to it. Cancelling
// ctx stops the stream early; the receiver then ends the observation on the
// bytes that landed and marks it incomplete.
func Send(ctx context.Context, addr string, cfg SenderConfig, fab SenderFabric) (Result, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if need := SendBufferBytes(cfg); uint64(len(fab.Buffer())) < need {
		return Result{}, fmt.Errorf("send buffer of %d bytes, need %d", len(fab.Buffer()), need)
	}
	d := net.Dialer{Timeout: cfg.DialTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Result{}, fmt.Errorf("connect to receiver: %w", err)
	}
	defer func() { _ = c.Close() }()
	k := newConn(c)
	_ = c.SetDeadline(time.Now().Add(cfg.DialTimeout + 20*time.Second))

	ep, err := fab.Open(ctx, EndpointConfig{QPs: cfg.QPs, SendDepth: cfg.TxDepth, RecvDepth: 1})
	if err != nil {
		return Result{}, fmt.Errorf("create %d queue pairs: %w", cfg.QPs, err)
	}
	defer func() { _ = ep.Close() }()
	if err := WritePreamble(k.w); err != nil {
		return Result{}, fmt.Errorf("handshake with %s: %w", addr, err)
	}
	hello := Hello{Mode: cfg.Mode, MsgBytes: uint32(cfg.MsgBytes), TotalBytes: cfg.Bytes, QPs: ep.Local()}
	if err := k.send(hello); err != nil {
		return Result{}, fmt.Errorf("handshake with %s: %w", addr, err)
	}
	m, err := k.recv()
	if err != nil {
		return Result{}, fmt.Errorf("handshake with %s: read answer: %w", addr, err)
	}
	var acc Accept
	switch m := m.(type) {
	case Reject:
		return Result{}, &RejectedError{Message: m.Message}
	case Accept:
		acc = m
	default:
		return Result{}, fmt.Errorf("handshake with %s: %w: unexpected %T", addr, ErrProtocol, m)
	}
	if len(acc.QPs) != cfg.QPs || acc.Mode != cfg.Mode || uint64(acc.MsgBytes) != cfg.MsgBytes {
		return Result{}, fmt.Errorf("handshake with %s: %w: receiver answered %d queue pairs, %s mode, %d-byte messages", addr, ErrProtocol, len(acc.QPs), acc.Mode, acc.MsgBytes)
	}
	if err := ep.Connect(acc.QPs); err != nil {
		return Result{}, fmt.Errorf("connect queue pairs to %s: %w", addr, err)
	}
	_ = c.SetDeadline(time.Time{})
	cfg.Log.Info("Connected", "receiver", addr, "mode", cfg.Mode, "qps", cfg.QPs, "mr", acc.MRMode, "blocks", acc.NBufs, "blockBytes", acc.BufSize)
	s := &sendSession{ctx: ctx, cfg: cfg, k: k, ep: ep, acc: acc, buf: fab.Buffer()}
	return s.run(ctx)
}

type sendSession struct {
	ctx context.Context
	cfg SenderConfig
	k   *conn
	ep  Endpoint
	acc Accept
	buf []byte
	g   Geometry

	free     [][]int // free send slots per queue pair
	inflight int
	held     time.Duration
}

type senderEvent struct {
	credit *Credit
	done   *Done
	err    error
}

func (s *sendSession) run(ctx context.Context) (Result, error) {
	cfg := s.cfg
	s.g = Geometry{BlockBytes: s.acc.BufSize, MsgBytes: cfg.MsgBytes, QPs: cfg.QPs, NBufs: int(s.acc.NBufs)}
	if err := s.g.Validate(); err != nil {
		return Result{}, fmt.Errorf("receiver geometry: %w", err)
	}
	s.free = make([][]int, cfg.QPs)
	for q := range s.free {
		for i := range cfg.TxDepth {
			s.free[q] = append(s.free[q], i)
		}
	}
	events := make(chan senderEvent, 64)
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		for {
			m, err := s.k.recv()
			var ev senderEvent
			switch m := m.(type) {
			case Credit:
				ev.credit = &m
			case Done:
				ev.done = &m
			case Reject:
				ev.err = &RejectedError{Message: m.Message}
			default:
				if err == nil {
					err = fmt.Errorf("%w: unexpected %T during the stream", ErrProtocol, m)
				}
				if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
					err = fmt.Errorf("receiver closed the connection: %w", ErrPeerGone)
				}
				ev.err = err
			}
			select {
			case events <- ev:
			case <-quit:
				return
			}
			if ev.err != nil || ev.done != nil {
				return
			}
		}
	}()

	cr := credits{nbufs: s.acc.NBufs}
	var early *Done
	handle := func(ev senderEvent) error {
		switch {
		case ev.credit != nil:
			return cr.add(*ev.credit)
		case ev.done != nil:
			early = ev.done
			return fmt.Errorf("receiver ended the observation early: %s", ev.done.Message)
		default:
			return ev.err
		}
	}

	start := time.Now()
	nextProgress := start.Add(cfg.ProgressEvery)
	var sent uint64
	wcs := make([]Completion, 64)
	var stopErr error
	complete := true
	var cur Credit
	haveCur := false
	for sl := uint64(0); ; sl++ {
		if cfg.Bytes > 0 && sent >= cfg.Bytes {
			break
		}
		if cfg.Duration > 0 && time.Since(start) >= cfg.Duration {
			break
		}
		if ctx.Err() != nil {
			complete, stopErr = false, ctx.Err()
			break
		}
		q := s.g.QP(sl)
		seq, off, length := s.g.Slice(sl)
		if cfg.Bytes > 0 {
			length = min(length, cfg.Bytes-sent)
		}
		// A free send slot on queue pair q.
		for len(s.free[q]) == 0 {
			if err := s.poll(wcs, true); err != nil {
				complete, stopErr = false, err
				break
			}
		}
		if stopErr != nil {
			break
		}
		// Write mode: the grant for this block.
		var remote uint64
		var rkey uint32
		if cfg.Mode == ModeWrite {
			if !haveCur || cur.Seq != seq {
				waitStart := time.Now()
				for {
					var ok bool
					if cur, ok = cr.take(seq); ok {
						break
					}
					select {
					case ev := <-events:
						if err := handle(ev); err != nil {
							complete, stopErr = false, err
						}
					case <-ctx.Done():
						complete, stopErr = false, ctx.Err()
					case <-time.After(time.Millisecond):
						if err := s.poll(wcs, false); err != nil {
							complete, stopErr = false, err
						}
					}
					if stopErr != nil {
						break
					}
				}
				if stopErr != nil {
					break
				}
				haveCur = true
				s.held += time.Since(waitStart)
			}
			base, key, err := s.acc.BlockTarget(cur.Index)
			if err != nil {
				complete, stopErr = false, err
				break
			}
			remote, rkey = base+off, key
		}
		slot := s.free[q][len(s.free[q])-1]
		boff := (uint64(q)*uint64(cfg.TxDepth) + uint64(slot)) * cfg.MsgBytes
		req := length
		n, err := cfg.Source.Fill(s.buf[boff:boff+length], sent)
		if err != nil {
			complete, stopErr = false, fmt.Errorf("read source at byte %d: %w", sent, err)
			break
		}
		if n == 0 {
			break
		}
		length = uint64(n)
		if cfg.RateBytesPerSecond > 0 {
			due := start.Add(time.Duration(float64(sent) / cfg.RateBytesPerSecond * float64(time.Second)))
			if w := time.Until(due); w > 0 {
				time.Sleep(w)
			}
		}
		wr := SendWR{ID: uint64(q)<<32 | uint64(slot), Op: OpSendImm, Offset: boff, Length: length, Imm: uint32(sl)}
		if cfg.Mode == ModeWrite {
			wr.Op, wr.RemoteAddr, wr.RKey = OpWriteImm, remote, rkey
		}
		if err := s.ep.PostSend(q, []SendWR{wr}); err != nil {
			complete, stopErr = false, fmt.Errorf("post slice %d on queue pair %d: %w", sl, q, err)
			break
		}
		s.free[q] = s.free[q][:len(s.free[q])-1]
		s.inflight++
		sent += length
		if err := s.poll(wcs, false); err != nil {
			complete, stopErr = false, err
			break
		}
		// Control messages (credits arrive ahead of need).
		for more := true; more; {
			select {
			case ev := <-events:
				if err := handle(ev); err != nil {
					complete, stopErr = false, err
					more = false
				}
			default:
				more = false
			}
		}
		if stopErr != nil {
			break
		}
		if now := time.Now(); cfg.Progress != nil && now.After(nextProgress) {
			cfg.Progress(Progress{Bytes: sent, Total: cfg.Bytes, Elapsed: now.Sub(start), HeldBack: s.held})
			nextProgress = now.Add(cfg.ProgressEvery)
		}
		if uint64(n) < req {
			break // the source ended inside this slice
		}
	}
	// Let every posted WR complete: only then has its data landed. (Not bound
	// to ctx: each WR completes, successfully or with an error, on its own.)
	s.ctx = context.Background()
	for s.inflight > 0 {
		if err := s.poll(wcs, true); err != nil {
			if stopErr == nil {
				stopErr = err
			}
			complete = false
			break
		}
	}
	elapsed := time.Since(start)
	if cfg.Progress != nil {
		cfg.Progress(Progress{Bytes: sent, Total: cfg.Bytes, Elapsed: elapsed, HeldBack: s.held})
	}
	res := Result{Bytes: sent, Seconds: elapsed.Seconds(), QPs: cfg.QPs, Mode: cfg.Mode, MRMode: s.acc.MRMode, HeldBackSeconds: s.held.Seconds()}
	if elapsed > 0 {
		res.Gbps = float64(sent) * 8 / elapsed.Seconds() / 1e9
	}
	if early != nil {
		res.Receiver = *early
		return res, stopErr
	}
	if err := s.k.send(End{Bytes: sent, Complete: complete}); err != nil {
		if stopErr != nil {
			return res, stopErr
		}
		return res, fmt.Errorf("send end of stream: %w", err)
	}
	// The receiver's final word.
	timeout := time.After(cfg.DoneTimeout)
	for {
		select {
		case ev := <-events:
			switch {
			case ev.done != nil:
				res.Receiver = *ev.done
				res.Complete = complete && ev.done.OK && ev.done.Bytes == sent
				if stopErr != nil {
					return res, stopErr
				}
				if !ev.done.OK {
					return res, fmt.Errorf("receiver reports the observation incomplete: %s", ev.done.Message)
				}
				if ev.done.Bytes != sent {
					return res, fmt.Errorf("receiver committed %d bytes, %d were sent", ev.done.Bytes, sent)
				}
				return res, nil
			case ev.credit != nil:
				// late grants for blocks the stream did not need
			default:
				if stopErr != nil {
					return res, stopErr
				}
				return res, fmt.Errorf("waiting for the receiver's confirmation: %w", ev.err)
			}
		case <-timeout:
			if stopErr != nil {
				return res, stopErr
			}
			return res, fmt.Errorf("no confirmation from the receiver within %s", cfg.DoneTimeout)
		}
	}
}

// waiter is an Endpoint that can sleep until a completion arrives.
type waiter interface {
	PollWait(ctx context.Context, wcs []Completion) (n int, ok bool, err error)
}

// poll reaps send completions; wait blocks until at least one arrives (on the
// completion channel when the endpoint has one, else spinning briefly).
func (s *sendSession) poll(wcs []Completion, wait bool) error {
	for spins := 0; ; spins++ {
		var n int
		var err error
		w, canWait := s.ep.(waiter)
		if wait && spins > 0 && canWait && s.inflight > 0 {
			var ok bool
			if n, ok, err = w.PollWait(s.ctx, wcs); !ok {
				n, err = s.ep.Poll(wcs)
			}
		} else {
			n, err = s.ep.Poll(wcs)
		}
		if err != nil {
			return fmt.Errorf("poll send completions: %w", err)
		}
		for _, wc := range wcs[:n] {
			if wc.Recv {
				continue
			}
			if wc.Err != nil {
				var we *WCError
				if errors.As(wc.Err, &we) {
					return we
				}
				return &WCError{QP: wc.QP, Status: wc.Err.Error()}
			}
			q, slot := int(wc.ID>>32), int(uint32(wc.ID))
			s.free[q] = append(s.free[q], slot)
			s.inflight--
		}
		if n > 0 || !wait || s.inflight == 0 {
			return nil
		}
		if spins < 64 {
			runtime.Gosched()
		} else {
			time.Sleep(20 * time.Microsecond)
		}
	}
}
