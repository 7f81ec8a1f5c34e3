package capture

import (
	"context"
	"runtime"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/ring"
)

// spinFor is how long an idle receive loop keeps polling before it sleeps on
// the completion channel: on a hardware link the next message is microseconds
// away and a sleep would cost more; a count of passes instead would spin for
// milliseconds on an emulated machine, where every pass is slow, taking CPU
// from the kernel that moves the data.
const spinFor = 20 * time.Microsecond

// idler is how the receive loop waits when nothing moves: while completions
// come at a steady rate (coalesce > 0), a sleep of that long on a timer
// (coalesce.go); else yields for up to spinFor, then (with a fabric.Notifier)
// arming the completion queue, one more pass, and a sleep until a completion,
// a ring block, a control message or a failure arrives; without one, short
// sleeps. A busy idler only ever yields.
type idler struct {
	n        fabric.Notifier
	busy     bool
	procs    int // GOMAXPROCS when the stream began
	armed    bool
	since    time.Time     // when this idle spell began
	coalesce time.Duration // set by the loop at the start of each idle spell
	// eventWait bounds a sleep on a completion event (eventWaitFor); set
	// with coalesce.
	eventWait time.Duration
	// lazyOpen (set with coalesce) leaves the blocks the ring worker opens
	// to the next wake: the sender still has room in two open blocks, so
	// their credits or receives are not due yet, and in write mode the
	// block's completion wakes the loop anyway. It saves a wake a block.
	lazyOpen bool
	napped   bool // this spell had its coalescing sleep
	timer    *time.Timer
	opened   []int        // blocks the sleep took from the ring worker
	ctrl     *ctrlEvent   // a control message the sleep took
	blocks   <-chan int   // the blocks the ring worker opens
	ringErr  <-chan error // the ring worker's failure
}

func newIdler(ep fabric.Endpoint, busy bool, rw *ring.Worker) *idler {
	w := &idler{busy: busy, procs: runtime.GOMAXPROCS(0), eventWait: eventWaitFor(false), blocks: rw.Opened(), ringErr: rw.Errs()}
	if n, ok := ep.(fabric.Notifier); ok {
		w.n = n
	}
	return w
}

// idle waits after the idle-th pass in a row that moved nothing; it returns
// the ring worker's failure.
func (w *idler) idle(ctx context.Context, idle int, ctrl chan ctrlEvent) error {
	if idle == 1 {
		w.since, w.napped = time.Now(), false
	}
	switch {
	case w.busy && idle >= 2 && w.procs > 1:
		// Nothing moved twice in a row: let the threads this loop waits
		// for run, on this core too. (With one P no other thread of the
		// process runs Go code while this one holds it: the OS yield would
		// only hand the core to other processes.)
		runtime.Gosched()
		osYield()
		return nil
	case w.busy || idle < 2 || !w.coalescing() && time.Since(w.since) < spinFor:
		runtime.Gosched()
		return nil
	case w.coalescing():
		// A pass after this sleep that moves nothing means the stream
		// paused: the spell goes on to sleep on the next completion.
		w.napped = true
		return w.sleep(ctx, w.coalesce, nil, ctrl)
	case w.n == nil:
		time.Sleep(50 * time.Microsecond)
		return nil
	case !w.armed:
		if err := w.n.Arm(); err != nil {
			w.n = nil  // cannot sleep on completions: short sleeps from now on
			return nil //nolint:nilerr // not the stream's failure: the loop goes on without events
		}
		w.armed = true
		return nil // one more pass: a completion before the arming raises no event
	}
	w.armed = false
	return w.sleep(ctx, w.eventWait, w.n.Events(), ctrl)
}

// eventWaitFor is how long an idle loop sleeps on a completion event before it
// passes anyway. Completions, opened blocks, control messages and failures wake
// it at once, so the limit is a safety net: but during a hold it is the
// cadence of the held reports (heldReportEvery), which go out from passes.
// Under TCG each spare wake costs the loop a pass and an arming: at a block a
// tenth of a second, a 50 ms net doubled the wakes of a write-mode stream.
func eventWaitFor(holding bool) time.Duration {
	if holding {
		return heldReportEvery
	}
	return time.Second
}

// coalescing reports whether this idle spell sleeps on the coalescing timer next:
// the next completion is a known while away, so the spell does not spin first.
func (w *idler) coalescing() bool { return w.coalesce > 0 && !w.napped }

// sleep waits for d, a completion event (events; nil: none), a block the ring
// worker opened (unless lazyOpen), a control message, the ring worker's failure
// or ctx.
func (w *idler) sleep(ctx context.Context, d time.Duration, events <-chan struct{}, ctrl chan ctrlEvent) error {
	opened := w.blocks
	if w.lazyOpen {
		opened = nil
	}
	if w.timer == nil {
		w.timer = time.NewTimer(d)
	} else {
		w.timer.Reset(d)
	}
	defer w.timer.Stop()
	select {
	case <-events:
	case idx := <-opened:
		w.opened = append(w.opened, idx)
	case e := <-ctrl:
		w.ctrl = &e
	case err := <-w.ringErr:
		return err
	case <-ctx.Done():
	case <-w.timer.C:
	}
	return nil
}
