package vdif

import "errors"

// ErrMalformed is matched (errors.Is) by every error about a frame that is
// not well-formed VDIF or does not fit the stream's declared shape (its
// length, its frames per second).
var ErrMalformed = errors.New("malformed VDIF frame")

// ErrOutOfRange is matched by every error about a well-formed frame the rule
// does not place: before the first second, a thread it does not know.
var ErrOutOfRange = errors.New("VDIF frame outside the placement rule")

// ErrInvalid is matched by the error for a frame its sender flagged invalid.
var ErrInvalid = errors.New("VDIF frame flagged invalid")

// Error is a reason a frame was rejected. The values are preallocated, so
// rejecting a frame allocates nothing; the kind is matched with errors.Is.
type Error struct {
	kind   error
	reason string
}

func (e *Error) Error() string        { return e.kind.Error() + ": " + e.reason }
func (e *Error) Is(target error) bool { return target == e.kind }

func malformed(reason string) *Error  { return &Error{kind: ErrMalformed, reason: reason} }
func outOfRange(reason string) *Error { return &Error{kind: ErrOutOfRange, reason: reason} }

// The reasons Decode and Place reject a frame for.
var (
	errShort       = malformed("shorter than its header")
	errFrameLength = malformed("frame length in the header is not the packet's length")
	errHeaderLong  = malformed("frame length in the header is shorter than the header")
	errPayload     = malformed("data array length differs from the rule's")
	errFrameNumber = malformed("frame number not below the frames per second")
	errInvalid     = &Error{kind: ErrInvalid, reason: "the invalid bit is set"}
	errBeforeFirst = outOfRange("second before the first one")
	errThread      = outOfRange("thread ID not in the rule")
	errOverflow    = outOfRange("stream offset beyond 2^64")
)
