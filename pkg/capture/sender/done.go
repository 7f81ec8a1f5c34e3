package sender

import (
	"fmt"
	"strings"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// withReceiver adds the receiver's account to the error that stopped a
// stream, unless it already is that account.
func withReceiver(err error, d wire.Done) error {
	if err == nil || d.OK || d.Message == "" || strings.Contains(err.Error(), d.Message) {
		return err
	}
	return fmt.Errorf("%w (the receiver: %s)", err, d.Message)
}

// awaitDone waits for the receiver's account of the observation.
func (s *sendSession) awaitDone(events <-chan senderEvent, res Result, complete bool, stopErr error) (Result, error) {
	timeout := time.After(s.cfg.DoneTimeout)
	// Progress reports go on while the receiver ends the observation (which
	// can wait for a block its readers hold).
	var tick <-chan time.Time
	if s.cfg.Progress != nil {
		t := time.NewTicker(s.cfg.ProgressEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-tick:
			s.progress(false)
		case ev := <-events:
			switch {
			case ev.done != nil:
				res.Receiver = *ev.done
				res.Complete = complete && ev.done.OK && ev.done.Bytes == res.Bytes
				if stopErr != nil {
					return res, withReceiver(stopErr, *ev.done)
				}
				if !ev.done.OK {
					return res, fmt.Errorf("receiver reports the observation incomplete: %s", ev.done.Message)
				}
				if ev.done.Bytes != res.Bytes {
					return res, fmt.Errorf("receiver committed %d bytes, %d were sent", ev.done.Bytes, res.Bytes)
				}
				return res, nil
			case ev.credit != nil || ev.posted != nil:
				// late grants for blocks or receives the stream did not need
			default:
				if stopErr != nil {
					return res, stopErr
				}
				return res, fmt.Errorf("waiting for the receiver's confirmation: %w", ev.err)
			}
		case <-timeout:
			if stopErr != nil {
				return res, stopErr
			}
			return res, fmt.Errorf("no confirmation from the receiver within %s", s.cfg.DoneTimeout)
		}
	}
}
