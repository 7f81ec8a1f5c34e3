package spead

import "errors"

// ErrMalformed is matched (errors.Is) by every error about a packet that is
// not well-formed SPEAD, or that breaks the rule's own assumptions about the
// stream (a timestamp off the step grid, a heap of another size).
var ErrMalformed = errors.New("malformed SPEAD packet")

// ErrOutOfRange is matched by every error about a well-formed packet the rule
// does not place: a timestamp before the first one, a channel outside the
// range, an offset that does not fit in 64 bits.
var ErrOutOfRange = errors.New("SPEAD packet outside the placement rule")

// ErrDescriptorsOnly is matched by the error about a packet that carries only
// the item descriptors ahead of the data in a heap holding both: metadata, not
// data, and not malformed.
var ErrDescriptorsOnly = errors.New("SPEAD packet of descriptors only")

// Error is a reason a packet was rejected. The values are preallocated, so
// rejecting a packet allocates nothing; the kind is matched with errors.Is.
type Error struct {
	kind   error
	reason string
}

func (e *Error) Error() string        { return e.kind.Error() + ": " + e.reason }
func (e *Error) Is(target error) bool { return target == e.kind }

func malformed(reason string) *Error  { return &Error{kind: ErrMalformed, reason: reason} }
func outOfRange(reason string) *Error { return &Error{kind: ErrOutOfRange, reason: reason} }

// The reasons Decode rejects a packet for.
var (
	errShort       = malformed("shorter than the 8-byte header")
	errMagic       = malformed("magic byte is not 0x53")
	errVersion     = malformed("version is not 4")
	errWidths      = malformed("item pointer widths are neither SPEAD-64-48 (2, 6) nor SPEAD-64-40 (3, 5)")
	errItemsPast   = malformed("item pointers run past the end of the packet")
	errTooMany     = malformed("more item pointers than a Packet holds (MaxItems)")
	errNotImm      = malformed("a standard item (heap counter, size, offset or payload length) is not immediate")
	errRepeated    = malformed("a standard item appears twice")
	errNoCounter   = malformed("no heap counter item (0x1)")
	errNoOffset    = malformed("no heap offset item (0x3)")
	errNoLength    = malformed("no payload length item (0x4)")
	errTruncated   = malformed("payload shorter than its payload length item")
	errLengthLong  = malformed("payload longer than its payload length item")
	errPastHeap    = malformed("heap offset plus payload length is beyond the heap size")
	errHeapSize    = malformed("heap size differs from the rule's")
	errNoHeapSize  = malformed("no heap size item and no heap size in the rule")
	errNoTimestamp = malformed("no immediate timestamp item")
	errOffGrid     = malformed("timestamp is not on the rule's step grid")
	errNoChannel   = malformed("no immediate channel item")
	errBeforeFirst = outOfRange("timestamp before the first heap")
	// errDescriptorsOnly: a packet of a heap led by descriptors that carries
	// none of the heap's data (ErrDescriptorsOnly).
	errDescriptorsOnly = &Error{kind: ErrDescriptorsOnly, reason: "only the descriptors ahead of a heap's data"}
	errChannel         = outOfRange("channel outside the rule's range")
	errOverflow        = outOfRange("stream offset beyond 2^64")
)
