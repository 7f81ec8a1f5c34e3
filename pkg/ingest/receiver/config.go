package receiver

import (
	"errors"
	"fmt"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/endpoint"
	"github.com/ringcap/ringcap/pkg/ingest/stream"
	"github.com/ringcap/ringcap/pkg/ingest/udp"
)

// Config is a packet-stream receiver: its sockets, its stream, its stop
// conditions.
type Config struct {
	// Stream is the protocol, placement rule, start and header template;
	// Serve sets HeaderBytes from the ring.
	Stream stream.Config
	// UDP are the sockets. With no Address, the address of Listen is bound
	// (--listen, --listen-on any or attachment=...), the wildcard when it is
	// unspecified. With groups the wildcard is bound and the groups are joined
	// on Interface, else on the interface holding the address.
	UDP    udp.Config
	Listen endpoint.Listen
	// ReorderBlocks is the reorder window in ring blocks.
	ReorderBlocks int
	// StopBytes ends the run once this many payload bytes are in the ring
	// (0: no limit); StopDuration after this long (0: no limit).
	StopBytes    uint64
	StopDuration time.Duration
	// IdleTimeout ends the run once no packet has arrived for this long after
	// the first (0: never); StopHeaps after this many SPEAD stream-stop heaps
	// (0: they are counted, not obeyed). Either ends the observation with what
	// arrived: a stream that loses packets still ends.
	IdleTimeout time.Duration
	StopHeaps   int
	// NewStyleHeader raises end-of-data on the header ring after the header.
	NewStyleHeader bool
	// Getenv reads the environment for Listen (nil: os.Getenv).
	Getenv func(string) string
}

// DefaultReorderBlocks is the reorder window when none is given.
const DefaultReorderBlocks = 4

// Validate checks what can be checked before the ring is known.
func (c Config) Validate() error {
	s := c.Stream
	s.HeaderBytes = 1 << 20 // the ring's; any size checks the rest
	if err := s.Validate(); err != nil {
		return err
	}
	if c.IdleTimeout < 0 || c.StopHeaps < 0 {
		return fmt.Errorf("an idle timeout of %v and %d stop heaps: want neither negative", c.IdleTimeout, c.StopHeaps)
	}
	if c.ReorderBlocks < 1 {
		return fmt.Errorf("a reorder window of %d blocks: want at least 1", c.ReorderBlocks)
	}
	if len(c.UDP.Ports) == 0 {
		return errors.New("no UDP ports to listen on")
	}
	u := c.UDP
	if len(u.Groups) > 0 {
		u.Address = wildcard(u.Groups)
	}
	return u.Validate()
}
