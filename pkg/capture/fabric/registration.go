package fabric

import (
	"errors"
	"fmt"
	"strings"
)

// MRMode says how an adapter registers a ring: the choice is the engine's
// (ringcap recv --mr, the RingCapture's memoryRegistration); every adapter
// resolves it by the same rule (ChooseMRMode).
type MRMode int

// Registration modes.
const (
	// MRAuto registers one region over the whole ring when its blocks are
	// mapped back to back, else one region per block.
	MRAuto MRMode = iota
	// MRWholeRing registers one region over the whole ring, or fails saying
	// why it cannot.
	MRWholeRing
	// MRPerBlock registers one region per block.
	MRPerBlock
)

func (m MRMode) String() string {
	switch m {
	case MRAuto:
		return "Auto"
	case MRWholeRing:
		return "WholeRing"
	case MRPerBlock:
		return "PerBlock"
	}
	return fmt.Sprintf("MRMode(%d)", int(m))
}

// Registered describes how a ring was registered with the device, as the
// receiver reports it: the mode in use (MRWholeRing or MRPerBlock, never
// MRAuto), the number of regions, the bytes they cover and why that mode.
type Registered struct {
	Mode    MRMode
	Regions int
	Bytes   uint64
	Reason  string
}

// ParseMRMode parses "auto", "wholering" or "perblock" (any case), as ringcap recv --mr.
func ParseMRMode(s string) (MRMode, error) {
	switch strings.ToLower(s) {
	case "auto":
		return MRAuto, nil
	case "wholering", "whole-ring":
		return MRWholeRing, nil
	case "perblock", "per-block":
		return MRPerBlock, nil
	}
	return 0, fmt.Errorf("memory registration mode %q: want auto, wholering or perblock", s)
}

// ErrNotContiguous is returned by WholeRing registration of a ring whose blocks are not
// mapped back to back.
var ErrNotContiguous = errors.New("ring blocks are not mapped contiguously")

// Ring is the memory an adapter registers: equal blocks attached in this
// process, possibly back to back (pkg/dada's Ring is one).
type Ring interface {
	NBufs() int
	BufSize() int
	// PageSize is the size of the pages backing the blocks.
	PageSize() int
	Block(i int) []byte
	BlockAddr(i int) uintptr
	// Contiguous returns the blocks as one region when they are mapped back to
	// back; otherwise ok is false and reason says why.
	Contiguous() (region []byte, ok bool, reason string)
}

// ChooseMRMode resolves the requested mode for a ring whose blocks are
// mapped back to back or not (why says why not): the mode to register in
// (MRWholeRing or MRPerBlock) and the reason, as status reports it.
func ChooseMRMode(mode MRMode, contiguous bool, why string) (MRMode, string, error) {
	switch mode {
	case MRAuto:
		if contiguous {
			return MRWholeRing, "blocks contiguous", nil
		}
		return MRPerBlock, why, nil
	case MRWholeRing:
		if !contiguous {
			return 0, "", fmt.Errorf("mode=WholeRing: %w: %s (use mode Auto or PerBlock)", ErrNotContiguous, why)
		}
		return MRWholeRing, "blocks contiguous", nil
	case MRPerBlock:
		return MRPerBlock, "per-block registration requested", nil
	}
	return 0, "", fmt.Errorf("unknown mode %v", mode)
}
