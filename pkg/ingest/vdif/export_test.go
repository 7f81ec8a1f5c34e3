package vdif

// The reasons Decode and Place reject a frame for, under exported names for the tests of
// package vdif_test, which build frames with internal/ingesttest (an internal test
// could not import it: it imports vdif).
var (
	ReasonBeforeFirst = errBeforeFirst
	ReasonFrameLength = errFrameLength
	ReasonFrameNumber = errFrameNumber
	ReasonHeaderLong  = errHeaderLong
	ReasonInvalid     = errInvalid
	ReasonOverflow    = errOverflow
	ReasonPayload     = errPayload
	ReasonShort       = errShort
	ReasonThread      = errThread
)
