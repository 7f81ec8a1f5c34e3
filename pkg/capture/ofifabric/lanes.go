package ofifabric

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/rdma/ofi"
)

// StartPostThreads implements fabric.ThreadPoster for the sender: one thread
// per CPU of cpus (ofi.LaneSet, outside the Go scheduler) drives endpoint q
// from thread q mod len(cpus): it posts what it is handed and reads the
// endpoint's completion queue, which is what progresses ofi_rxm's protocol,
// as a C writer with a thread per endpoint does. The sender's loop then only
// hands batches over and takes translated completions; it calls no libfabric
// function while the threads run.
func (ep *endpoint) StartPostThreads(cpus []int, depth int, log *slog.Logger) (fabric.PostLanes, error) {
	if ep.recv {
		return nil, errors.New("start posting threads: the receiver's endpoints are not posted from threads")
	}
	if len(cpus) == 0 {
		return nil, errors.New("start posting threads: no CPUs")
	}
	if th := ep.d.Info().Threading; len(cpus) > 1 && !th.PerEndpoint() {
		return nil, fmt.Errorf("start %d posting threads: the domain's threading model (%v) lets one thread at a time call libfabric: post from one", len(cpus), th)
	}
	cfgs := make([]ofi.LaneConfig, len(cpus))
	for i, cpu := range cpus {
		cfgs[i].CPU = cpu
	}
	for qi, q := range ep.qps {
		c := &cfgs[qi%len(cpus)]
		c.Endpoints, c.CQs = append(c.Endpoints, q.ep), append(c.CQs, q.cq)
	}
	// A work request is at most two operations (a write and its length
	// message); a tail per endpoint comes on top.
	set, err := ep.d.StartLanes(cfgs, 2*depth+2*len(ep.qps))
	if err != nil {
		return nil, fmt.Errorf("start posting threads: %w", err)
	}
	l := &lanes{ep: ep, set: set, n: len(cpus), buf: make([]ofi.LaneCompletion, 64)}
	l.failedAt, l.fail = context.WithCancel(context.Background())
	ep.lanes.Store(l)
	log.Info("Started the endpoints' threads: each posts to and reads the completion queue of its endpoints",
		"threads", len(cpus), "cpus", cpus, "endpoints", len(ep.qps))
	return l, nil
}

// lanes are the ofi endpoint's fabric.PostLanes: endpoint q is endpoint q/n
// of lane q mod n.
type lanes struct {
	ep  *endpoint
	set *ofi.LaneSet
	n   int
	buf []ofi.LaneCompletion // Take's, under the endpoint's pollMu or in Stop

	failedAt context.Context // done at the first failed post
	fail     context.CancelFunc

	mu       sync.Mutex
	stopped  bool
	failures []fabric.PostFailure
}

// Post implements fabric.PostLanes: endpoint q's operations are made here,
// in posting order (txOrder), and handed to its thread.
func (l *lanes) Post(q int, wrs []fabric.SendWR) error {
	qp := l.ep.qps[q]
	qp.mu.Lock()
	defer qp.mu.Unlock()
	ops := qp.ops[:0]
	for _, w := range wrs {
		var err error
		if ops, err = l.ep.appendSend(q, ops, w); err != nil {
			qp.tx.drop(len(ops))
			return err
		}
	}
	qp.ops = ops
	if err := l.set.Post(q%l.n, q/l.n, q, len(wrs), ops); err != nil {
		qp.tx.drop(len(ops))
		return err
	}
	return nil
}

func (l *lanes) Failed() context.Context { return l.failedAt }
func (l *lanes) Threads() int            { return l.n }

// collect translates what the threads read into the endpoints' stashes; it
// returns the entries taken. A failed post cancels failedAt.
func (l *lanes) collect() (int, error) {
	took := 0
	for i := range l.n {
		for {
			k, failed, err := l.set.Take(i, l.buf)
			if err != nil {
				return took, fmt.Errorf("take the completions of posting thread %d: %w", i, err)
			}
			if failed {
				l.fail()
			}
			for _, c := range l.buf[:k] {
				qi := c.Ep*l.n + i
				q := l.ep.qps[qi]
				q.mu.Lock()
				l.ep.translate(qi, c.Completion)
				q.mu.Unlock()
			}
			took += k
			if k < len(l.buf) {
				break
			}
		}
	}
	return took, nil
}

// Stop implements fabric.PostLanes: the threads post what they were handed
// and end; what they read goes to the stashes, and from then on the
// endpoint reads its completion queues itself again.
func (l *lanes) Stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	l.stopped = true
	for _, f := range l.set.Stop() {
		q := l.ep.qps[f.Tag]
		q.mu.Lock()
		q.tx.drop(min(f.Ops, len(q.tx.pend))) // the newest: nothing after them was posted
		q.mu.Unlock()
		l.failures = append(l.failures, fabric.PostFailure{QP: f.Tag, N: f.WRs, Err: f.Err})
	}
	l.ep.pollMu.Lock()
	if _, err := l.collect(); err != nil {
		l.failures = append(l.failures, fabric.PostFailure{Err: err})
	}
	l.ep.lanes.Store(nil)
	l.ep.pollMu.Unlock()
	l.set.Close()
	if len(l.failures) > 0 {
		l.fail()
	}
}

func (l *lanes) TakeFailures() []fabric.PostFailure {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.failures
	l.failures = nil
	return f
}

// pollLanes is Poll while the threads run: what they read, then the stashes
// round robin; took counts the threads' entries, which may all be
// unsignalled (nothing for the engine) and still mean more may follow.
func (ep *endpoint) pollLanes(l *lanes, wcs []fabric.Completion) (n, took int, err error) {
	if took, err = l.collect(); err != nil {
		return 0, took, err
	}
	n, err = ep.takeRound(wcs, false) // the threads read the queues
	return n, took, err
}

// pollWaitLanes is PollWait while the threads run: it sleeps until a thread
// read something (or failed a post), ctx is done or the endpoint closes.
func (ep *endpoint) pollWaitLanes(ctx context.Context, l *lanes, wcs []fabric.Completion) (int, error) {
	for {
		ep.pollMu.Lock()
		if ep.lanes.Load() != l { // stopped: back to the queues
			ep.pollMu.Unlock()
			return ep.Poll(wcs)
		}
		n, took, err := ep.pollLanes(l, wcs)
		ep.pollMu.Unlock()
		if n > 0 || err != nil {
			return n, err
		}
		if took > 0 {
			continue
		}
		if err := l.set.Wait(ctx); err != nil && !errors.Is(err, ofi.ErrClosed) {
			return 0, fmt.Errorf("wait for completions: %w", err)
		}
	}
}
