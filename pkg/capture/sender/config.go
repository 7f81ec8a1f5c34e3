package sender

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/dada"
)

// Config configures Send.
type Config struct {
	// Mode, QPs and MsgBytes must match the receiver's; zero takes the
	// receiver's (see Connect).
	Mode     wire.Mode
	QPs      int
	MsgBytes uint64
	// Header holds keywords for the observation's header (SOURCE,
	// UTC_START, ...), sent in the Hello; the receiver merges them over its
	// template (see ObservationHeaders for the precedence).
	Header  []wire.HeaderField
	TxDepth int // send WRs in flight per queue pair (default 16)
	// PostList caps the work requests handed to the device in one post
	// (default 0: all a queue pair can take at once). 1 posts them one by
	// one, as perftest does by default: on a software device (rxe) each
	// post then moves one message through the kernel's network path before
	// the next, instead of queueing a queue pair's whole batch there.
	PostList int
	// AckTimeout is the queue pairs' local ACK timeout exponent (default
	// DefaultAckTimeout).
	AckTimeout uint8
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
	// AnswerTimeout bounds the wait for the receiver's answer to the Hello
	// (default 20 s); each report that the receiver is held back by its
	// ring's readers (no block free for the stream yet) starts it anew.
	AnswerTimeout time.Duration
	// DoneTimeout bounds the wait for the receiver's final word (default 60 s).
	DoneTimeout time.Duration
	// Pin places the thread that posts work requests on one CPU (default:
	// anywhere). With a software RDMA device (rxe) the doorbell runs the
	// device's transmit path on the posting CPU, and doorbells of one queue
	// pair rung from two CPUs leave through two per-CPU network queues, out of
	// order: pin there.
	Pin CPUPin
	// PostCPUs, with two or more CPUs, posts from one OS thread per CPU
	// listed, pinned there (Pin must then be PinNone); queue pair q is posted
	// from thread q mod len(PostCPUs). On a software RDMA device the posting
	// CPU carries its queue pairs' whole data path (the transmit path, and
	// the receive, acknowledgement and completion paths that follow), so one
	// posting thread per CPU spreads that work. One CPU listed is PinTo it.
	PostCPUs []int
	// BusyPoll keeps polling the completion queue while every send slot is
	// in flight instead of sleeping on completion events (as perftest's
	// client does): a CPU kept busy for the lowest latency.
	BusyPoll bool
	Log      *slog.Logger
}

// CPUPin says where the sender's posting thread runs: PinNone, PinCurrent or
// PinTo(n).
type CPUPin int

const (
	// PinNone leaves the posting thread to the scheduler.
	PinNone CPUPin = 0
	// PinCurrent pins it to the CPU it runs on when the stream starts.
	PinCurrent CPUPin = -1
)

// PinTo pins the posting thread to CPU n.
func PinTo(n int) CPUPin { return CPUPin(n + 1) }

// Progress is a running total of a send.
type Progress struct {
	Bytes uint64 // posted
	// Acked is the bytes whose send completions have come back: landed in
	// the receiver's memory. It trails Bytes by what is in flight, so a rate
	// over an interval of a running stream is best taken from it.
	Acked   uint64
	Total   uint64 // 0 when unknown
	Elapsed time.Duration
	// HeldBack is the time the receiver has been held back by its ring's
	// readers (no block free for the stream), as it reports, the hold going
	// on now included.
	HeldBack time.Duration
	// Holding says the receiver is held back now; HoldFor is how long this
	// hold has lasted.
	Holding bool
	HoldFor time.Duration
}

// Result is the outcome of Send.
type Result struct {
	Bytes   uint64
	Seconds float64
	Gbps    float64
	QPs     int
	Mode    wire.Mode
	MRMode  wire.MRMode
	Fabric  wire.Fabric // the transport and provider the stream went over
	// HeldBackSeconds is the time the receiver was held back by its ring's
	// readers during the stream, as it reports.
	HeldBackSeconds float64
	Complete        bool
	Receiver        wire.Done // the receiver's account of the observation
}

// RejectedError is returned when the receiver refused the connection.
type RejectedError struct{ Message string }

func (e *RejectedError) Error() string { return "receiver refused the connection: " + e.Message }

// Validate checks the configuration.
func (c Config) Validate() error {
	if err := wire.ValidateLink(c.Mode, c.QPs, c.MsgBytes); err != nil {
		return err
	}
	return c.validateStream()
}

// validateGiven checks what can be checked before the receiver's Settings
// are known: the link settings given (zero: the receiver's) and the rest.
func (c Config) validateGiven() error {
	m, q, b := c.Mode, c.QPs, c.MsgBytes
	if m == 0 {
		m = wire.ModeSend
	}
	if q == 0 {
		q = max(1, len(c.PostCPUs))
	}
	if b == 0 {
		b = 1
	}
	if err := wire.ValidateLink(m, q, b); err != nil {
		return err
	}
	c.Mode, c.QPs, c.MsgBytes = m, q, b
	return c.validateStream()
}

// adopt takes the receiver's settings where the configuration leaves them
// zero, and refuses one it gives that differs.
func (c Config) adopt(s wire.Settings) (Config, error) {
	switch {
	case c.Mode != 0 && c.Mode != s.Mode:
		return c, fmt.Errorf("the receiver runs %s mode, this sender asked for %s mode (--mode; leave it out to take the receiver's)", s.Mode, c.Mode)
	case c.QPs != 0 && c.QPs != int(s.QPs):
		return c, fmt.Errorf("the receiver uses %d queue pairs, this sender asked for %d (--qps; leave it out to take the receiver's)", s.QPs, c.QPs)
	case c.MsgBytes != 0 && c.MsgBytes != uint64(s.MsgBytes):
		return c, fmt.Errorf("the receiver uses %d-byte messages, this sender asked for %d (--msg-bytes; leave it out to take the receiver's)", s.MsgBytes, c.MsgBytes)
	}
	c.Mode, c.QPs, c.MsgBytes = s.Mode, int(s.QPs), uint64(s.MsgBytes)
	return c, c.Validate()
}

// validateStream checks everything but the link settings.
func (c Config) validateStream() error {
	switch {
	case c.Source == nil:
		return errors.New("no data source")
	case c.Bytes == 0 && c.Duration <= 0:
		if _, ok := c.Source.(ReaderSource); !ok {
			return errors.New("give --bytes or --duration")
		}
	}
	if c.AckTimeout > 30 {
		return fmt.Errorf("ACK timeout exponent %d: want 1..30", c.AckTimeout)
	}
	if len(c.Header) > wire.MaxHeaderFields {
		return fmt.Errorf("%d header keywords: at most %d", len(c.Header), wire.MaxHeaderFields)
	}
	for _, f := range c.Header {
		if err := dada.NewHeader().Set(f.Key, f.Value); err != nil {
			return fmt.Errorf("header keyword %s=%s: %w", f.Key, f.Value, err)
		}
	}
	if c.TxDepth < 0 {
		return fmt.Errorf("--tx-depth %d: want 1 or more (0: the default, 16)", c.TxDepth)
	}
	if c.PostList < 0 {
		return fmt.Errorf("--post-list %d: want 0 (no cap) or more", c.PostList)
	}
	if len(c.PostCPUs) > 0 && c.Pin != PinNone {
		return errors.New("give either one CPU to pin the posting thread to or a list of CPUs for posting threads, not both")
	}
	if len(c.PostCPUs) > c.QPs {
		return fmt.Errorf("%d posting threads for %d queue pairs: want at most one per queue pair", len(c.PostCPUs), c.QPs)
	}
	for _, cpu := range c.PostCPUs {
		if cpu < 0 {
			return fmt.Errorf("posting thread CPU %d: want 0 or more", cpu)
		}
	}
	return nil
}

func (c *Config) defaults() {
	if c.TxDepth == 0 {
		c.TxDepth = 16
	}
	if c.AckTimeout == 0 {
		c.AckTimeout = fabric.DefaultAckTimeout
	}
	if c.AnswerTimeout == 0 {
		c.AnswerTimeout = 20 * time.Second
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
	if len(c.PostCPUs) == 1 && c.Pin == PinNone {
		c.Pin, c.PostCPUs = PinTo(c.PostCPUs[0]), nil
	}
}

// SendBufferBytes is the registered send buffer Send needs for cfg.
func SendBufferBytes(cfg Config) uint64 {
	cfg.defaults()
	return uint64(cfg.QPs) * uint64(cfg.TxDepth) * cfg.MsgBytes
}
