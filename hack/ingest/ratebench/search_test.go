package main

import (
	"errors"
	"math"
	"testing"
)

// fakeReceiver loses packets above limit; the fake sender reaches at most ceiling.
type fakeReceiver struct {
	limit, ceiling float64
	asked          []float64
}

func (f *fakeReceiver) trial(rate float64) (outcome, error) {
	f.asked = append(f.asked, rate)
	got := math.Min(rate, f.ceiling)
	return outcome{lossFree: got <= f.limit, achieved: got}, nil
}

var params = searchParams{Start: 128 * mib, Min: 16 * mib, Max: 8192 * mib, Factor: 2, Bisect: 3, SenderShort: 0.1}

func TestSearchStepsUpThenBisects(t *testing.T) {
	t.Parallel()
	f := &fakeReceiver{limit: 700 * mib, ceiling: math.Inf(1)}
	got, err := search(params, f.trial)
	if err != nil {
		t.Fatal(err)
	}
	// 128, 256, 512 loss-free, 1024 lossy; then sqrt(512*1024)=724 lossy, sqrt(512*724)=609
	// loss-free, sqrt(609*724)=664 loss-free.
	want := []float64{128, 256, 512, 1024, 724.08, 608.87, 663.98}
	if len(f.asked) != len(want) {
		t.Fatalf("asked %v MiB/s, want %v", inMiB(f.asked), want)
	}
	for i, w := range want {
		if math.Abs(f.asked[i]/mib-w) > 0.01 {
			t.Fatalf("asked %v MiB/s, want %v", inMiB(f.asked), want)
		}
	}
	if math.Abs(got.Rate/mib-663.98) > 0.01 || got.SenderBound || got.Trials != 7 {
		t.Errorf("found %+v, want 663.98 MiB/s, not sender-bound, 7 trials", got)
	}
}

// The search stops where the sender falls short of the rate asked for: the receiver's own
// limit lies above.
func TestSearchStopsAtTheSendersCeiling(t *testing.T) {
	t.Parallel()
	f := &fakeReceiver{limit: math.Inf(1), ceiling: 400 * mib}
	got, err := search(params, f.trial)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.asked) != 3 || got.Requested != 512*mib || got.Rate != 400*mib || !got.SenderBound || got.AtMax {
		t.Errorf("asked %v MiB/s, found %+v; want 128, 256, 512 and 400 MiB/s at the sender's ceiling", inMiB(f.asked), got)
	}
}

func TestSearchStopsAtMax(t *testing.T) {
	t.Parallel()
	p := params
	p.Max = 300 * mib
	f := &fakeReceiver{limit: math.Inf(1), ceiling: math.Inf(1)}
	got, err := search(p, f.trial)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.asked) != 3 || got.Rate != 300*mib || !got.SenderBound || !got.AtMax {
		t.Errorf("asked %v MiB/s, found %+v; want 128, 256, 300 and a bound search", inMiB(f.asked), got)
	}
}

func TestSearchStepsDownFromALossyStart(t *testing.T) {
	t.Parallel()
	f := &fakeReceiver{limit: 50 * mib, ceiling: math.Inf(1)}
	got, err := search(params, f.trial)
	if err != nil {
		t.Fatal(err)
	}
	// 128 and 64 lossy, 32 loss-free; then 45.25 loss-free, 53.82 lossy, 49.35 loss-free.
	if got.Rate < 45*mib || got.Rate > 50*mib || len(f.asked) != 6 || f.asked[2] != 32*mib {
		t.Errorf("asked %v MiB/s, found %+v; want 32 MiB/s third and about 49 MiB/s in 6 runs", inMiB(f.asked), got)
	}
}

func TestSearchFindsNoLossFreeRate(t *testing.T) {
	t.Parallel()
	f := &fakeReceiver{limit: 1 * mib, ceiling: math.Inf(1)}
	if _, err := search(params, f.trial); !errors.Is(err, errNoLossFree) {
		t.Errorf("search: %v, want errNoLossFree", err)
	}
	if last := f.asked[len(f.asked)-1]; last != 16*mib {
		t.Errorf("last rate tried %v MiB/s, want the lowest, 16", last/mib)
	}
}

func TestSearchParamsRefused(t *testing.T) {
	t.Parallel()
	for _, p := range []searchParams{
		{Start: 10, Min: 20, Max: 30, Factor: 2},
		{Start: 40, Min: 20, Max: 30, Factor: 2},
		{Start: 20, Min: 20, Max: 30, Factor: 1},
		{Start: 20, Min: 0, Max: 30, Factor: 2},
	} {
		if _, err := search(p, (&fakeReceiver{}).trial); err == nil {
			t.Errorf("search with %+v: no error", p)
		}
	}
}

func inMiB(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Round(x/mib*100) / 100
	}
	return out
}
