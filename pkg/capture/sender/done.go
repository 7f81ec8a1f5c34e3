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

// awaitDone waits for the receiver's account of the observation, at most
// DoneTimeout, and no longer than the receiver's connection lasts: the
// connection's failure may have reached the stream before this wait (the
// control reader ends after delivering it, and then marks the peer gone).
func (s *sendSession) awaitDone(c *control, res Result, complete bool, stopErr error) (Result, error) {
	timeout := time.After(s.cfg.DoneTimeout)
	// Progress reports go on while the receiver ends the observation (which
	// can wait for a block its readers hold).
	var tick <-chan time.Time
	if s.cfg.Progress != nil {
		t := time.NewTicker(s.cfg.ProgressEvery)
		defer t.Stop()
		tick = t.C
	}
	gone := c.peer.Done()
	for {
		select {
		case <-tick:
			s.progress(false)
		case ev := <-c.events:
			if out, ok, err := doneEvent(ev, res, complete, stopErr); ok {
				return out, err
			}
		case <-gone:
			return afterGone(c, res, complete, stopErr)
		case <-timeout:
			if stopErr != nil {
				return res, stopErr
			}
			return res, fmt.Errorf("no confirmation from the receiver within %s", s.cfg.DoneTimeout)
		}
	}
}

// afterGone ends awaitDone once the receiver's connection has gone: with
// what the reader delivered before it ended (queued), else with the stream's
// own failure or the connection's.
func afterGone(c *control, res Result, complete bool, stopErr error) (Result, error) {
	for {
		select {
		case ev := <-c.events:
			if out, ok, err := doneEvent(ev, res, complete, stopErr); ok {
				return out, err
			}
		default:
			if stopErr != nil {
				return res, stopErr
			}
			return res, fmt.Errorf("waiting for the receiver's confirmation: receiver closed the connection: %w", wire.ErrPeerGone)
		}
	}
}

// doneEvent is what one event from the receiver means for awaitDone: the
// result and error when it ends the wait (ok), else nothing (late grants).
func doneEvent(ev senderEvent, res Result, complete bool, stopErr error) (Result, bool, error) {
	switch {
	case ev.done != nil:
		res.Receiver = *ev.done
		res.Complete = complete && ev.done.OK && ev.done.Bytes == res.Bytes
		switch {
		case stopErr != nil:
			return res, true, withReceiver(stopErr, *ev.done)
		case !ev.done.OK:
			return res, true, fmt.Errorf("receiver reports the observation incomplete: %s", ev.done.Message)
		case ev.done.Bytes != res.Bytes:
			return res, true, fmt.Errorf("receiver committed %d bytes, %d were sent", ev.done.Bytes, res.Bytes)
		}
		return res, true, nil
	case ev.credit != nil || ev.posted != nil:
		return res, false, nil // late grants for blocks or receives the stream did not need
	case stopErr != nil:
		return res, true, stopErr
	}
	return res, true, fmt.Errorf("waiting for the receiver's confirmation: %w", ev.err)
}
