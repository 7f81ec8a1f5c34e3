package capture

import (
	"context"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/sender"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

func TestCoalescePeriod(t *testing.T) {
	for _, tc := range []struct {
		name             string
		rate             float64
		perBlock, usable int
		want             time.Duration
	}{
		{"rate unknown", 0, 64, 512, 0},
		{"no receives usable", 1000, 64, 0, 0},
		{"a quarter of a block's time", 19200, 64, 512, 833333 * time.Nanosecond},
		{"at most maxCoalesce", 600, 64, 512, maxCoalesce},
		{"half the time the receives last", 1000, 64, 8, 4 * time.Millisecond},
		{"would take fewer than two completions", 1e6, 4, 512, 0},
		{"takes exactly two", 1000, 8, 512, 2 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := coalescePeriod(tc.rate, tc.perBlock, tc.usable); got != tc.want {
				t.Fatalf("coalescePeriod(%v, %d, %d) = %v, want %v", tc.rate, tc.perBlock, tc.usable, got, tc.want)
			}
		})
	}
}

func TestRateMeter(t *testing.T) {
	var m rateMeter
	t0 := time.Unix(1000, 0)
	m.add(5)
	m.sample(t0) // the first sample only starts the clock
	if m.rate != 0 {
		t.Fatalf("rate after the first sample = %v, want 0", m.rate)
	}
	m.add(10)
	m.sample(t0.Add(10 * time.Millisecond))
	if m.rate != 1000 {
		t.Fatalf("rate = %v, want 1000", m.rate)
	}
	m.add(30)
	m.sample(t0.Add(20 * time.Millisecond)) // 3000/s: a quarter of the way there
	if m.rate != 1500 {
		t.Fatalf("rate = %v, want 1500", m.rate)
	}
	m.add(7)
	m.sample(t0.Add(20 * time.Millisecond)) // the same instant: counted in the next sample
	if m.rate != 1500 || m.count != 7 {
		t.Fatalf("rate %v, count %d after a sample at the same instant, want 1500 and 7", m.rate, m.count)
	}
	m.sample(t0.Add(20*time.Millisecond + 2*rateGap)) // a pause: the rate no longer holds
	if m.rate != 0 || m.count != 0 {
		t.Fatalf("rate %v, count %d after a pause, want 0 and 0", m.rate, m.count)
	}
}

// A send-mode stream that arrives at a steady pace, slower than the loop spins
// for, is taken several completions a pass: the receive loop sleeps on a timer
// and arms its completion queue only when the stream pauses, not once a
// message, and loses nothing. (Write mode has one completion a block.)
func TestSteadyStreamIsCoalesced(t *testing.T) {
	const nbufs, bufsz, msg = 4, 65536, 2048 // 32 messages a block
	const total = 16 * bufsz
	const messages = total / msg
	h := testRing(t, nbufs, bufsz)
	hs := startReceiver(t, h, ReceiverConfig{Mode: wire.ModeSend, QPs: 1, MsgBytes: msg, RxDepth: 16, StopObservations: 1}, wire.MRWholeRing)
	hs.net.Hook = func(int, fabric.SendWR) { time.Sleep(250 * time.Microsecond) } // far above spinFor
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reads := readObservations(t, ctx, h, 1, 8, 0)
	res, err := hs.send(ctx, sender.Config{Mode: wire.ModeSend, QPs: 1, MsgBytes: msg, Bytes: total, Source: sender.PatternSource{Seed: 8}, TxDepth: 4})
	if err != nil || !res.Complete {
		t.Fatalf("send %+v: %v", res, err)
	}
	waitOneObservation(t, hs, reads, total)
	// One arm a message without coalescing; with it, a sleep takes about eight
	// messages (a quarter of a block) and arms follow pauses only.
	if arms := hs.net.Arms(); arms*4 > messages {
		t.Fatalf("the receive loop armed its completion queue %d times for %d messages: it slept on a completion event for more than one message in four, not on the coalescing timer", arms, messages)
	}
}

// A lazy sleep leaves a block the ring worker opened in its channel (the next
// pass takes it); an eager one wakes for it.
func TestLazyOpenSleep(t *testing.T) {
	for _, lazy := range []bool{false, true} {
		opened := make(chan int, 3) // the ring worker's, for a window of 2
		opened <- 7
		w := &idler{lazyOpen: lazy, blocks: opened}
		if err := w.sleep(t.Context(), 20*time.Millisecond, nil, make(chan ctrlEvent)); err != nil {
			t.Fatal(err)
		}
		took := len(w.opened) == 1 && w.opened[0] == 7
		if left := len(opened); took == lazy || left != map[bool]int{false: 0, true: 1}[lazy] {
			t.Fatalf("lazyOpen=%v: the sleep took %v, %d left in the channel", lazy, w.opened, left)
		}
	}
}
