package sender

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// goneControl is a control whose reader has ended (the peer gone) with
// events queued.
func goneControl(events ...senderEvent) *control {
	c := &control{events: make(chan senderEvent, 64), quit: make(chan struct{})}
	c.peer, c.gone = context.WithCancel(context.Background())
	for _, ev := range events {
		c.events <- ev
	}
	c.gone()
	return c
}

// A receiver whose connection failure reached the stream first (its event
// taken) leaves no event for the wait for Done: the wait ends with the
// stream's failure as soon as the peer is gone, not after DoneTimeout; a Done
// or a failure the reader delivered before it ended still counts.
func TestAwaitDoneEndsWhenThePeerIsGone(t *testing.T) {
	s := &sendSession{cfg: Config{DoneTimeout: time.Hour}}
	stopErr := errors.New("queue pair 0: send completion failed: Broken pipe")
	for _, c := range []struct {
		name     string
		events   []senderEvent
		stopErr  error
		want     string
		complete bool
	}{
		{"nothing queued, the stream failed", nil, stopErr, stopErr.Error(), false},
		{"nothing queued, the stream whole", nil, nil, "waiting for the receiver's confirmation: receiver closed the connection: " + wire.ErrPeerGone.Error(), false},
		{"late grants, then nothing", []senderEvent{{credit: &wire.Credit{}}, {posted: &wire.Posted{}}}, stopErr, stopErr.Error(), false},
		{"a Done queued", []senderEvent{{credit: &wire.Credit{}}, {done: &wire.Done{OK: true, Bytes: 100}}}, nil, "", true},
		{"a failure queued", []senderEvent{{err: errors.New("reset by peer")}}, nil, "waiting for the receiver's confirmation: reset by peer", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan struct{})
			var res Result
			var err error
			go func() {
				defer close(done)
				res, err = s.awaitDone(goneControl(c.events...), Result{Bytes: 100}, true, c.stopErr)
			}()
			select {
			case <-done:
			case <-time.After(time.Minute): // a guard against the hour's DoneTimeout, not a speed check
				t.Fatal("awaitDone waited on with the peer gone")
			}
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Errorf("error %q, want %q", got, c.want)
			}
			if res.Complete != c.complete {
				t.Errorf("complete %v, want %v", res.Complete, c.complete)
			}
		})
	}
}
