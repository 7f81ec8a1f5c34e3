package vdif

import (
	"math/bits"
	"time"
)

// Placement is where a frame's data array goes in the stream.
type Placement struct {
	Offset uint64 // stream byte of the data array's first byte
	Length uint64 // data array bytes
	Frame  uint64 // frame index since the first second: second*framesPerSecond + frame number
	Thread int    // the thread's index in the rule
}

// Placer places the frames of one stream by a Rule. The first second is set
// by Start or taken from the first frame placed. It allocates nothing and is
// not safe for concurrent use.
type Placer struct {
	rule    Rule
	threads uint64
	payload uint64
	index   [MaxThreads]uint16 // thread ID -> index + 1; 0 when unknown
	known   int                // threads learned or given
	first   int64              // Unix second of frame index 0
	started bool
}

// NewPlacer returns a placer for rule r.
func NewPlacer(r Rule) (*Placer, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	pl := &Placer{rule: r, threads: uint64(r.ThreadCount()), payload: uint64(r.PayloadBytes)}
	for k, id := range r.ThreadIDs {
		pl.index[id] = uint16(k + 1)
	}
	pl.known = len(r.ThreadIDs)
	return pl, nil
}

// Start sets the second of frame index 0 (an observation that starts at a
// given time); frames before it are out of range.
func (pl *Placer) Start(t time.Time) { pl.first, pl.started = t.Unix(), true }

// First returns the start of frame index 0, once known.
func (pl *Placer) First() (time.Time, bool) { return time.Unix(pl.first, 0).UTC(), pl.started }

// PayloadBytes returns the data array length in use, once known.
func (pl *Placer) PayloadBytes() uint64 { return pl.payload }

// Place returns where f's data array goes.
func (pl *Placer) Place(f *Frame) (Placement, error) {
	switch {
	case f.Invalid:
		return Placement{}, errInvalid
	case f.FrameNumber >= pl.rule.FramesPerSecond:
		return Placement{}, errFrameNumber
	case pl.payload != 0 && uint64(len(f.Data)) != pl.payload:
		return Placement{}, errPayload
	}
	sec := EpochUnix(f.RefEpoch) + int64(f.Seconds)
	if pl.started && sec < pl.first {
		return Placement{}, errBeforeFirst
	}
	k, ok := pl.thread(f.ThreadID)
	if !ok {
		return Placement{}, errThread
	}
	if !pl.started {
		pl.first, pl.started = sec, true
	}
	if pl.payload == 0 {
		pl.payload = uint64(len(f.Data))
	}
	return pl.offset(uint64(sec-pl.first), uint64(f.FrameNumber), k)
}

// thread returns the index of thread id, learning it while the rule has
// room for threads in order of appearance.
func (pl *Placer) thread(id uint16) (uint64, bool) {
	if k := pl.index[id]; k != 0 {
		return uint64(k - 1), true
	}
	if len(pl.rule.ThreadIDs) > 0 || uint64(pl.known) == pl.threads {
		return 0, false
	}
	pl.known++
	pl.index[id] = uint16(pl.known)
	return uint64(pl.known - 1), true
}

// offset is ((sec*fps + fn)*threads + k)*payload, checked for overflow.
func (pl *Placer) offset(sec, fn, k uint64) (Placement, error) {
	hi, frame := bits.Mul64(sec, uint64(pl.rule.FramesPerSecond))
	frame += fn
	if hi != 0 || frame < fn {
		return Placement{}, errOverflow
	}
	hi, slot := bits.Mul64(frame, pl.threads)
	slot += k
	if hi != 0 || slot < k {
		return Placement{}, errOverflow
	}
	hi, start := bits.Mul64(slot, pl.payload)
	_, carry := bits.Add64(start, pl.payload, 0)
	if hi != 0 || carry != 0 {
		return Placement{}, errOverflow
	}
	return Placement{Offset: start, Length: pl.payload, Frame: frame, Thread: int(k)}, nil
}
