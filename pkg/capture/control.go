package capture

import (
	"errors"
	"fmt"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// ctrlEvent is a control message from the sender during the stream (End),
// or the connection's failure.
type ctrlEvent struct {
	end *wire.End
	err error
}

// readControl reads the sender's control messages during the stream and
// hands them to the stream loop on ctrl until quit is closed; the connection
// failing ends it with an event saying so.
func (s *session) readControl(ctrl chan<- ctrlEvent, quit <-chan struct{}) {
	_ = s.k.NetConn().SetDeadline(time.Time{})
	deliver := func(e ctrlEvent) bool {
		select {
		case ctrl <- e:
			return true
		case <-quit:
			return false
		}
	}
	for {
		m, err := s.k.Recv()
		if err != nil {
			if !errors.Is(err, wire.ErrProtocol) {
				err = fmt.Errorf("%w: %w", wire.ErrPeerGone, err) // EOF, reset, ...
			}
			deliver(ctrlEvent{err: err})
			return
		}
		end, ok := m.(wire.End)
		if !ok {
			deliver(ctrlEvent{err: fmt.Errorf("%w: unexpected %T during the stream", wire.ErrProtocol, m)})
			return
		}
		if !deliver(ctrlEvent{end: &end}) {
			return
		}
	}
}
