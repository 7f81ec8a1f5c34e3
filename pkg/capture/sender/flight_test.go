package sender

import (
	"slices"
	"testing"
)

// Send slots go in flight from the last free one, every sigEvery-th signalled;
// a completion frees its slot and every earlier one of its queue pair.
func TestFlight(t *testing.T) {
	f := newFlight(2, 8) // signal every 2nd
	var signals []bool
	for i := range 3 {
		slot, ok := f.lastFree(1)
		if !ok || slot != 7-i {
			t.Fatalf("slot %d, %v; want %d", slot, ok, 7-i)
		}
		signals = append(signals, f.take(1, inFlight{slice: uint64(10 + i), slot: slot, bytes: 100}))
	}
	if !slices.Equal(signals, []bool{false, true, false}) || f.n != 3 {
		t.Fatalf("signals %v, in flight %d", signals, f.n)
	}
	if got := f.oldest(1, 99); got != 10 {
		t.Errorf("oldest on 1 = %d, want 10", got)
	}
	if got := f.oldest(0, 99); got != 99 {
		t.Errorf("oldest on 0, none in flight = %d, want its next, 99", got)
	}
	if got := f.retire(1, 6); got != 200 || f.n != 1 {
		t.Errorf("retire up to slot 6: %d bytes, %d in flight; want 200, 1", got, f.n)
	}
	e, ok := f.drop(1)
	if !ok || e.slice != 12 || f.n != 0 || len(f.free[1]) != 8 {
		t.Errorf("drop: %+v, %v, %d in flight, %d free", e, ok, f.n, len(f.free[1]))
	}
	if _, ok := f.drop(1); ok {
		t.Error("drop with none in flight")
	}
	if _, ok := f.lastFree(0); !ok {
		t.Error("queue pair 0 has no free slot")
	}
}

// The FIFO of slices in flight keeps its order across many turns of its ring,
// from either end, as a slice kept in order would.
func TestSliceFIFOWraps(t *testing.T) {
	t.Parallel()
	f := newSliceFIFO(3)
	var want []uint64
	for i := range uint64(40) {
		switch {
		case i%5 == 4 && len(want) > 0: // take the newest back
			got := f.popBack().slice
			if got != want[len(want)-1] {
				t.Fatalf("step %d: popBack %d, want %d", i, got, want[len(want)-1])
			}
			want = want[:len(want)-1]
		case len(want) == 3 || i%3 == 2:
			if len(want) == 0 {
				continue
			}
			if got := f.pop().slice; got != want[0] {
				t.Fatalf("step %d: pop %d, want %d", i, got, want[0])
			}
			want = want[1:]
		default:
			f.push(inFlight{slice: i})
			want = append(want, i)
		}
		if f.len() != len(want) || (len(want) > 0 && f.front() != want[0]) {
			t.Fatalf("step %d: %d in the FIFO, front %d; want %v", i, f.len(), f.front(), want)
		}
	}
}
