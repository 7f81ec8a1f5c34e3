package spead

// The reasons Decode and Place reject a packet for, under exported names for the tests of
// package spead_test, which build packets with internal/ingesttest (an internal test
// could not import it: it imports spead).
var (
	ReasonBeforeFirst = errBeforeFirst
	ReasonChannel     = errChannel
	ReasonHeapSize    = errHeapSize
	ReasonItemsPast   = errItemsPast
	ReasonLengthLong  = errLengthLong
	ReasonMagic       = errMagic
	ReasonNoChannel   = errNoChannel
	ReasonNoCounter   = errNoCounter
	ReasonNoHeapSize  = errNoHeapSize
	ReasonNoLength    = errNoLength
	ReasonNoOffset    = errNoOffset
	ReasonNoTimestamp = errNoTimestamp
	ReasonNotImm      = errNotImm
	ReasonOffGrid     = errOffGrid
	ReasonOverflow    = errOverflow
	ReasonPastHeap    = errPastHeap
	ReasonRepeated    = errRepeated
	ReasonShort       = errShort
	ReasonTooMany     = errTooMany
	ReasonTruncated   = errTruncated
	ReasonVersion     = errVersion
	ReasonWidths      = errWidths
)
