package fabric

import (
	"errors"
	"strings"
	"testing"
)

func TestParseMRMode(t *testing.T) {
	for in, want := range map[string]MRMode{"auto": MRAuto, "Auto": MRAuto, "wholering": MRWholeRing, "WholeRing": MRWholeRing, "perblock": MRPerBlock, "per-block": MRPerBlock} {
		got, err := ParseMRMode(in)
		if err != nil || got != want {
			t.Errorf("ParseMRMode(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseMRMode("whole"); err == nil || !strings.Contains(err.Error(), "auto, wholering or perblock") {
		t.Errorf("ParseMRMode(whole) error = %v", err)
	}
}

func TestChooseMRMode(t *testing.T) {
	const why = "block size 413184 is not a multiple of the page size"
	for _, c := range []struct {
		mode       MRMode
		contiguous bool
		want       MRMode
		reason     string // or the error's text
		err        error
	}{
		{MRAuto, true, MRWholeRing, "blocks contiguous", nil},
		{MRAuto, false, MRPerBlock, why, nil},
		{MRWholeRing, true, MRWholeRing, "blocks contiguous", nil},
		{MRWholeRing, false, 0, "mode=WholeRing: ring blocks are not mapped contiguously: " + why + " (use mode Auto or PerBlock)", ErrNotContiguous},
		{MRPerBlock, true, MRPerBlock, "per-block registration requested", nil},
		{MRPerBlock, false, MRPerBlock, "per-block registration requested", nil},
		{MRMode(7), true, 0, "unknown mode MRMode(7)", nil},
	} {
		got, reason, err := ChooseMRMode(c.mode, c.contiguous, why)
		switch {
		case err != nil && (err.Error() != c.reason || (c.err != nil && !errors.Is(err, c.err))):
			t.Errorf("ChooseMRMode(%v, %v): error %v, want %q", c.mode, c.contiguous, err, c.reason)
		case err == nil && (got != c.want || reason != c.reason):
			t.Errorf("ChooseMRMode(%v, %v) = %v, %q; want %v, %q", c.mode, c.contiguous, got, reason, c.want, c.reason)
		case err == nil && c.want == 0:
			t.Errorf("ChooseMRMode(%v, %v) = %v, want an error", c.mode, c.contiguous, got)
		}
	}
}
