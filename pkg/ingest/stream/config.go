package stream

import (
	"errors"
	"fmt"
	"time"

	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/ingest/spead"
	"github.com/ringcap/ringcap/pkg/ingest/vdif"
)

// Protocol is the packet format of a stream.
type Protocol string

// The protocols a pipeline decodes.
const (
	SPEAD Protocol = "spead"
	VDIF  Protocol = "vdif"
)

// Config is one stream's pipeline: its protocol and placement rule, where
// its observation starts and what its header needs.
type Config struct {
	Protocol Protocol
	// SPEAD is the placement rule when Protocol is SPEAD.
	SPEAD spead.Rule
	// SPEADTime gives a SPEAD stream's timestamps a time (UTC_START).
	SPEADTime SPEADTime
	// VDIF is the placement rule when Protocol is VDIF.
	VDIF vdif.Rule
	// Start is where the observation starts; the zero value starts at the
	// first packet placed.
	Start Start
	// Template is the observation header the pipeline sets its keys over
	// (headerrules.Template builds it); nil: HDR_VERSION 1.0 only.
	Template *dada.Header
	// HeaderBytes is the ring's header block size (HDR_SIZE).
	HeaderBytes int
}

// SPEADTime is how a SPEAD stream's timestamp item maps to UTC: the time of
// timestamp t is SyncTime + t / SampleRate. Each value is the user's when
// given (non-zero), else the named immediate item's value in the first packet
// placed (an integer: Unix seconds, samples per second).
type SPEADTime struct {
	SyncTime     uint64 // Unix seconds of timestamp 0
	SyncTimeID   uint32 // immediate item holding SyncTime
	SampleRate   uint64 // timestamp units per second (the ADC sample rate, Hz)
	SampleRateID uint32 // immediate item holding SampleRate
}

// Start is where an observation starts. With At unset it starts at the first
// packet placed: that packet's SPEAD timestamp, or the start of its VDIF
// second. With At set, packets before the start are counted (BeforeStart) and
// not written.
type Start struct {
	At bool
	// Timestamp is a SPEAD stream's first timestamp (heap index 0).
	Timestamp uint64
	// Time is a VDIF stream's first second (truncated to the second).
	Time time.Time
}

// Validate checks that the configuration can run a pipeline.
func (c Config) Validate() error {
	if c.HeaderBytes <= 0 {
		return fmt.Errorf("stream: header block of %d bytes", c.HeaderBytes)
	}
	switch c.Protocol {
	case SPEAD:
		if err := c.SPEAD.Validate(); err != nil {
			return fmt.Errorf("stream: SPEAD rule: %w", err)
		}
		return c.SPEADTime.validate()
	case VDIF:
		if err := c.VDIF.Validate(); err != nil {
			return fmt.Errorf("stream: VDIF rule: %w", err)
		}
		return nil
	}
	return fmt.Errorf("stream: protocol %q is neither %q nor %q", c.Protocol, SPEAD, VDIF)
}

func (t SPEADTime) validate() error {
	switch {
	case t.SyncTime == 0 && t.SyncTimeID == 0:
		return errors.New("stream: SPEAD sync time: give it or name the immediate item that holds it")
	case t.SampleRate == 0 && t.SampleRateID == 0:
		return errors.New("stream: SPEAD sample rate: give it or name the immediate item that holds it")
	}
	return nil
}
