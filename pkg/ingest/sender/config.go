package sender

import (
	"errors"
	"fmt"
	"time"

	"github.com/ringcap/ringcap/pkg/ingest/stream"
)

// DefaultPacketBytes is a SPEAD packet's payload when Config gives none, and
// a VDIF frame's data array when the rule gives none.
const DefaultPacketBytes = 8192

// Config is one run of the sender.
type Config struct {
	// Target is the receiver's HOST:PORT (a multicast group is fine).
	Target string
	// Stream is the placement rule and start, as the receiver is given it.
	Stream stream.Config
	// Bytes is the stream length to send (a VDIF stream rounds it up to
	// whole frames).
	Bytes uint64
	// Seed is the test pattern's seed.
	Seed uint64
	// RateBytesPerSecond limits the payload rate; 0 is unlimited.
	RateBytesPerSecond float64
	// PacketBytes is a SPEAD packet's payload (default DefaultPacketBytes,
	// at most the heap size).
	PacketBytes uint64
	// DropEvery skips every DropEvery-th packet (0: none), a loss test.
	DropEvery uint64
	// MulticastTTL is the IP TTL of multicast packets (0: the system's).
	MulticastTTL int
	// MulticastInterface is the interface multicast leaves by ("": the
	// route's).
	MulticastInterface string
	// SyncTime and SampleRate are the values sent in the SPEAD sync time and
	// sample rate items when the rule names them by item (defaults: now and
	// 1e9).
	SyncTime, SampleRate uint64
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Validate checks what the sender cannot send.
func (c Config) Validate() error {
	switch {
	case c.Target == "":
		return errors.New("sender: no target HOST:PORT")
	case c.Bytes == 0:
		return errors.New("sender: no bytes to send")
	case c.DropEvery == 1:
		return errors.New("sender: dropping every packet (drop every 1) sends nothing")
	case c.RateBytesPerSecond < 0:
		return fmt.Errorf("sender: rate %g bytes/s is negative", c.RateBytesPerSecond)
	}
	switch c.Stream.Protocol {
	case stream.SPEAD:
		return c.Stream.SPEAD.Validate()
	case stream.VDIF:
		return c.Stream.VDIF.Validate()
	}
	return fmt.Errorf("sender: protocol %q: want spead or vdif", c.Stream.Protocol)
}

func (c Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}
