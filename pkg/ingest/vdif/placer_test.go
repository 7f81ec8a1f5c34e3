package vdif_test

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/ingesttest"
	"github.com/ringcap/ringcap/pkg/ingest/vdif"
)

const (
	epoch   = 52 // 2026-01-01
	sec0    = 1000
	fps     = 5
	payload = 64
)

// frame is a frame of the test stream: second sec0+s, frame number fn,
// thread id.
func frame(s, fn uint32, thread uint16) []byte {
	return ingesttest.VDIF(vdif.Header{RefEpoch: epoch, Seconds: sec0 + s, FrameNumber: fn, ThreadID: thread, StationID: 0x4566}, make([]byte, payload))
}

func place(t *testing.T, pl *vdif.Placer, b []byte) (vdif.Placement, error) {
	t.Helper()
	var f vdif.Frame
	if err := vdif.Decode(b, &f); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return pl.Place(&f)
}

func TestPlaceFormula(t *testing.T) {
	t.Parallel()
	pl, err := vdif.NewPlacer(vdif.Rule{FramesPerSecond: fps, ThreadIDs: []uint16{7, 3, 900}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		s, fn  uint32
		thread uint16
		want   uint64
	}{
		{0, 0, 3, 1 * payload}, // the first frame sets the first second
		{0, 0, 7, 0},
		{0, 0, 900, 2 * payload},
		{0, 1, 7, 3 * payload},
		{0, 4, 900, (4*3 + 2) * payload},
		{1, 0, 7, 5 * 3 * payload},
		{9, 2, 3, ((9*5+2)*3 + 1) * payload},
	} {
		pm, err := place(t, pl, frame(c.s, c.fn, c.thread))
		if err != nil || pm.Offset != c.want || pm.Length != payload || pm.Frame != uint64(c.s*fps+c.fn) {
			t.Errorf("second %d frame %d thread %d: %+v, %v; want offset %d", c.s, c.fn, c.thread, pm, err, c.want)
		}
	}
	first, ok := pl.First()
	if want := time.Date(2026, 1, 1, 0, 16, 40, 0, time.UTC); !ok || !first.Equal(want) {
		t.Errorf("first second %v, %v; want %v", first, ok, want)
	}
	if pl.PayloadBytes() != payload {
		t.Errorf("learned payload %d, want %d", pl.PayloadBytes(), payload)
	}
}

// Threads not named by the rule take indices in order of first appearance,
// up to the rule's count.
func TestPlaceLearnsThreads(t *testing.T) {
	t.Parallel()
	pl, err := vdif.NewPlacer(vdif.Rule{FramesPerSecond: fps, PayloadBytes: payload, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		thread uint16
		index  int
		err    error
	}{{40, 0, nil}, {2, 1, nil}, {40, 0, nil}, {5, 0, vdif.ReasonThread}, {2, 1, nil}} {
		pm, err := place(t, pl, frame(0, 1, c.thread))
		if !errors.Is(err, c.err) || (err == nil && (pm.Thread != c.index || pm.Offset != uint64((2+c.index)*payload))) {
			t.Errorf("thread %d: %+v, %v; want index %d, %v", c.thread, pm, err, c.index, c.err)
		}
	}
}

// Whatever order the frames arrive in, they tile the stream.
func TestPlaceTilesTheStream(t *testing.T) {
	t.Parallel()
	threads := []uint16{1, 0, 5, 4}
	var frames [][]byte
	for s := range uint32(3) {
		for fn := range uint32(fps) {
			for _, th := range threads {
				frames = append(frames, frame(s, fn, th))
			}
		}
	}
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(frames), func(i, j int) { frames[i], frames[j] = frames[j], frames[i] })
	pl, err := vdif.NewPlacer(vdif.Rule{FramesPerSecond: fps, ThreadIDs: threads})
	if err != nil {
		t.Fatal(err)
	}
	pl.Start(time.Unix(vdif.EpochUnix(epoch)+sec0, 0))
	covered := make([]bool, len(frames))
	for _, b := range frames {
		pm, err := place(t, pl, b)
		if err != nil {
			t.Fatal(err)
		}
		if pm.Offset%payload != 0 || covered[pm.Offset/payload] {
			t.Fatalf("placement %+v overlaps or is not frame-aligned", pm)
		}
		covered[pm.Offset/payload] = true
	}
	for i, c := range covered {
		if !c {
			t.Errorf("frame slot %d not covered", i)
		}
	}
}

func TestPlaceRejects(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		b    []byte
		want error
		kind error
	}{
		{"invalid", ingesttest.VDIF(vdif.Header{Invalid: true, RefEpoch: epoch, Seconds: sec0 + 1}, make([]byte, payload)), vdif.ReasonInvalid, vdif.ErrInvalid},
		{"frame number = frames per second", frame(1, fps, 7), vdif.ReasonFrameNumber, vdif.ErrMalformed},
		{"another data array length", ingesttest.VDIF(vdif.Header{RefEpoch: epoch, Seconds: sec0 + 1, ThreadID: 7}, make([]byte, 2*payload)), vdif.ReasonPayload, vdif.ErrMalformed},
		{"legacy header, longer data array", ingesttest.VDIF(vdif.Header{Legacy: true, RefEpoch: epoch, Seconds: sec0 + 1, ThreadID: 7}, make([]byte, payload+16)), vdif.ReasonPayload, vdif.ErrMalformed},
		{"unknown thread", frame(1, 0, 8), vdif.ReasonThread, vdif.ErrOutOfRange},
		{"before the first second", frame(0, 4, 7), vdif.ReasonBeforeFirst, vdif.ErrOutOfRange},
		{"an earlier epoch", ingesttest.VDIF(vdif.Header{RefEpoch: epoch - 1, Seconds: sec0 + 2, ThreadID: 7}, make([]byte, payload)), vdif.ReasonBeforeFirst, vdif.ErrOutOfRange},
	} {
		pl, err := vdif.NewPlacer(vdif.Rule{FramesPerSecond: fps, ThreadIDs: []uint16{7}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := place(t, pl, frame(1, 0, 7)); err != nil {
			t.Fatalf("%s: the first frame: %v", c.name, err)
		}
		_, err = place(t, pl, c.b)
		if !errors.Is(err, c.want) || !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// A legacy frame with the same data array places like a standard one.
func TestPlaceLegacy(t *testing.T) {
	t.Parallel()
	pl, err := vdif.NewPlacer(vdif.Rule{FramesPerSecond: fps, PayloadBytes: payload, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	pl.Start(time.Unix(vdif.EpochUnix(epoch)+sec0, 0))
	pm, err := place(t, pl, ingesttest.VDIF(vdif.Header{Legacy: true, RefEpoch: epoch, Seconds: sec0 + 2, FrameNumber: 3}, make([]byte, payload)))
	if err != nil || pm.Offset != (2*fps+3)*payload {
		t.Errorf("legacy frame: %+v, %v", pm, err)
	}
}

func TestPlaceOverflow(t *testing.T) {
	t.Parallel()
	pl, err := vdif.NewPlacer(vdif.Rule{FramesPerSecond: 1<<24 - 1, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	pl.Start(time.Unix(vdif.EpochUnix(0), 0))
	big := make([]byte, 1<<20)
	// 2^29 s * 2^24 frames * 2^20 bytes is past 2^64.
	if _, err := place(t, pl, ingesttest.VDIF(vdif.Header{Seconds: 1 << 29}, big)); !errors.Is(err, vdif.ReasonOverflow) || !errors.Is(err, vdif.ErrOutOfRange) {
		t.Errorf("2^29 s of 1 MiB frames: %v, want %v", err, vdif.ReasonOverflow)
	}
	if _, err := place(t, pl, ingesttest.VDIF(vdif.Header{Seconds: 1 << 10}, big)); err != nil {
		t.Errorf("2^10 s of 1 MiB frames: %v", err)
	}
}

func TestRuleValidate(t *testing.T) {
	t.Parallel()
	for name, r := range map[string]vdif.Rule{
		"no frames per second":   {Threads: 1},
		"2^24 frames per second": {FramesPerSecond: 1 << 24, Threads: 1},
		"payload not 8-aligned":  {FramesPerSecond: 1, Threads: 1, PayloadBytes: 12},
		"no threads":             {FramesPerSecond: 1},
		"1025 threads":           {FramesPerSecond: 1, Threads: 1025},
		"count and IDs disagree": {FramesPerSecond: 1, Threads: 2, ThreadIDs: []uint16{1}},
		"thread ID 1024":         {FramesPerSecond: 1, ThreadIDs: []uint16{1024}},
		"thread ID twice":        {FramesPerSecond: 1, ThreadIDs: []uint16{3, 3}},
	} {
		if err := r.Validate(); err == nil {
			t.Errorf("%s: valid", name)
		}
		if _, err := vdif.NewPlacer(r); err == nil {
			t.Errorf("%s: NewPlacer accepted it", name)
		}
	}
}

func TestPlaceAllocatesNothing(t *testing.T) {
	pl, err := vdif.NewPlacer(vdif.Rule{FramesPerSecond: fps, ThreadIDs: []uint16{7}})
	if err != nil {
		t.Fatal(err)
	}
	var good, bad vdif.Frame
	if err := vdif.Decode(frame(0, 1, 7), &good); err != nil {
		t.Fatal(err)
	}
	if err := vdif.Decode(frame(0, 1, 8), &bad); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, err = pl.Place(&good) }); n != 0 || err != nil {
		t.Errorf("Place: %v allocations, %v", n, err)
	}
	if n := testing.AllocsPerRun(100, func() { _, err = pl.Place(&bad) }); n != 0 || err == nil {
		t.Errorf("Place of a rejected frame: %v allocations, %v", n, err)
	}
}
