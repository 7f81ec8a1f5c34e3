package observation

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/placement"
	"github.com/ringcap/ringcap/pkg/capture/ring"
	"github.com/ringcap/ringcap/pkg/capture/status"
	"github.com/ringcap/ringcap/pkg/dada"
)

// Config is what an observation needs from its receiver.
type Config struct {
	Number   int                // the observation's number
	Geometry placement.Geometry // how the stream is cut into blocks and slices
	Writer   ring.BlockWriter
	Blocks   int // blocks held open at once (the window)
	// Header builds the observation's header with UTC_START at start
	// (unless the keywords set it); HeaderSize is the header block's size.
	Header     func(start time.Time) (*dada.Header, error)
	HeaderSize int
	Tracker    *status.Tracker
	// Last reports whether the observation, ending with bytes, meets the
	// receiver's stop condition.
	Last func(bytes uint64) bool
	Log  *slog.Logger
}

// Observation is one observation in the ring: its window of open blocks, the
// ring worker, the header, its counts and holds, and its close order.
type Observation struct {
	cfg    Config
	win    *placement.Window
	ring   *ring.Worker
	bytes  uint64
	blocks uint64
	// fullPending counts full blocks committed but not yet sent to the ring
	// worker (see FlushFull).
	fullPending int
	held        status.HoldClock
	firstByte   time.Time // when the first data landed (zero before)
	headerDone  bool      // the header is in the ring
	closers     Closers
	complete    bool   // the stream ended complete (End)
	lost        uint64 // landed bytes past the first gap, not committed (End)
}

// Start starts an observation: its window and its ring worker, which opens
// blocks until ctx ends or the observation does.
func Start(ctx context.Context, cfg Config) (*Observation, error) {
	win, err := placement.New(cfg.Geometry)
	if err != nil {
		return nil, fmt.Errorf("observation %d: %w", cfg.Number, err)
	}
	win.Hold = cfg.Blocks >= 2
	o := &Observation{cfg: cfg, win: win, ring: ring.NewWorker(cfg.Writer, cfg.Blocks)}
	cfg.Tracker.ObservationBegan(cfg.Number)
	go o.ring.Run(ctx)
	// Closed in reverse: the end of the observation goes into the ring
	// through the worker, which then stops.
	o.closers.Push(func() error { o.ring.Stop(); return nil })
	o.closers.Push(o.commitEnd)
	return o, nil
}

// Window is where the observation's data lands.
func (o *Observation) Window() *placement.Window { return o.win }

// Ring is the observation's ring worker: the blocks it opened, its failure.
func (o *Observation) Ring() *ring.Worker { return o.ring }

// Number is the observation's number.
func (o *Observation) Number() int { return o.cfg.Number }

// Bytes and Blocks are what was committed so far.
func (o *Observation) Bytes() uint64 { return o.bytes }

// Blocks is the number of blocks committed so far.
func (o *Observation) Blocks() uint64 { return o.blocks }

// Attach adds a data path that writes into the observation's blocks: End
// closes it (the last attached first) before it commits the end, so that
// nothing writes into a block after it is handed to the readers.
func (o *Observation) Attach(close func() error) {
	o.closers.Push(close)
}

// DataLanded notes that data landed at now: the first time is UTC_START.
func (o *Observation) DataLanded(now time.Time) {
	if o.firstByte.IsZero() {
		o.firstByte = now
	}
}

// End ends the observation: it closes the attached data paths, commits the
// end (every complete block; for a stream that is not complete, the longest
// gap-free prefix) and stops the ring worker, in that order. lost is what
// landed past the first gap of a stream that is not complete.
func (o *Observation) End(complete bool) (lost uint64, err error) {
	if !complete && o.win.Room() == 0 {
		// Ended before the loop saw that no block can take data (the
		// last blocks landed with the sender's end): ending the
		// observation may wait for a block the readers hold.
		o.HoldBegan()
	}
	o.complete = complete
	err = o.closers.Close()
	// A hold going on when the stream ended lasted until the end of the
	// observation was in the ring (which may need a block the readers hold).
	o.HoldEnded()
	return o.lost, err
}

// commitEnd commits the last blocks and ends the observation in the ring.
func (o *Observation) commitEnd() error {
	var fill []placement.Filled
	if !o.complete {
		fill, o.lost = o.win.Truncate()
	}
	if err := o.writeHeader(); err != nil {
		return err
	}
	for _, f := range fill {
		if err := o.commit(f); err != nil {
			return err
		}
	}
	if err := o.FlushFull(); err != nil {
		return err
	}
	o.ending(o.bytes)
	return o.ring.EndOfData()
}
