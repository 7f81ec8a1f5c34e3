package sender

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
)

// The sender posts from one OS thread per CPU of Config.PostCPUs, each
// pinned there, through fabric.PostLanes.
//
// Why: on a software RDMA device (rxe) the doorbell runs the queue pair's
// transmit path in the posting thread, and the packets' receive,
// acknowledgement and completion paths follow on the same CPU. A sender that
// posts from one thread therefore keeps one CPU busy while the others idle.
//
// The sender's loop stays the only owner of its state: it hands each batch
// over and counts it in flight at once.
//
// Two kinds implement it: posters, goroutines locked to their threads, for
// any Endpoint; and an endpoint's own threads (fabric.ThreadPoster), which
// the verbs endpoint runs outside the Go scheduler (verbs.PostThread).

// poster hands a queue pair's work requests to the fabric: endpointPoster
// from the stream's own thread, lanePoster through posting threads
// (fabric.PostLanes: the endpoint's own, as verbs and libfabric have, else
// posters). A post that fails says which work requests it was posting
// (fabric.PostError).
type poster interface {
	post(q int, wrs []fabric.SendWR) error
}

// endpointPoster posts on the endpoint from the calling thread.
type endpointPoster struct{ ep fabric.Endpoint }

func (p endpointPoster) post(q int, wrs []fabric.SendWR) error {
	if err := p.ep.PostSend(q, wrs); err != nil {
		return fabric.PostError(q, wrs, err)
	}
	return nil
}

// lanePoster hands work requests over to posting threads; their failures
// come back through the lanes (fabric.PostLanes.Failed).
type lanePoster struct{ lanes fabric.PostLanes }

func (p lanePoster) post(q int, wrs []fabric.SendWR) error {
	if err := p.lanes.Post(q, wrs); err != nil {
		return fabric.PostError(q, wrs, err)
	}
	return nil
}

// startLanes starts the posting threads: the endpoint's own when it has
// them, else posters. depth bounds the work requests ever handed over and
// not yet posted.
func startLanes(ep fabric.Endpoint, cpus []int, depth int, log *slog.Logger) (fabric.PostLanes, error) {
	if tp, ok := ep.(fabric.ThreadPoster); ok {
		return tp.StartPostThreads(cpus, depth, log)
	}
	return startPosters(ep, cpus, depth, log)
}

// posters are fabric.PostLanes on goroutines locked to their OS threads.
type posters struct {
	ep    fabric.Endpoint
	lanes []chan postBatch
	wg    sync.WaitGroup
	free  sync.Pool // *[]SendWR

	mu       sync.Mutex
	failures []fabric.PostFailure
	failedAt context.Context // done at the first failure
	fail     context.CancelFunc
	stopped  bool
}

type postBatch struct {
	q   int
	wrs *[]fabric.SendWR
}

// startPosters starts one posting thread per CPU; depth bounds the batches
// ever handed over and not yet posted (the sender's send slots), so handing
// over never blocks.
func startPosters(ep fabric.Endpoint, cpus []int, depth int, log *slog.Logger) (*posters, error) {
	p := &posters{ep: ep}
	p.failedAt, p.fail = context.WithCancel(context.Background())
	p.free.New = func() any { return new([]fabric.SendWR) }
	started := make(chan error, len(cpus))
	for i, cpu := range cpus {
		ch := make(chan postBatch, depth)
		p.lanes = append(p.lanes, ch)
		p.wg.Add(1)
		go p.lane(i, cpu, ch, started, log)
	}
	var errs []error
	for range cpus {
		if err := <-started; err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		p.Stop()
		return nil, errs[0]
	}
	return p, nil
}

func (p *posters) lane(i, cpu int, in <-chan postBatch, started chan<- error, log *slog.Logger) {
	defer p.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unpin, err := pinThread(PinTo(cpu), log.With("thread", i))
	if err != nil {
		started <- fmt.Errorf("posting thread %d: %w", i, err)
		for range in { // the pool is stopped at once; nothing is handed over
		}
		return
	}
	defer unpin()
	started <- nil
	var broken error
	for b := range in {
		wrs := *b.wrs
		err := broken
		if err == nil {
			if err = p.ep.PostSend(b.q, wrs); err != nil {
				err = fabric.PostError(b.q, wrs, err)
				broken = err
			}
		}
		if err != nil {
			p.mu.Lock()
			p.failures = append(p.failures, fabric.PostFailure{QP: b.q, N: len(wrs), Err: err})
			p.mu.Unlock()
			p.fail()
		}
		*b.wrs = wrs[:0]
		p.free.Put(b.wrs)
	}
}

func (p *posters) Post(q int, wrs []fabric.SendWR) error {
	b := p.free.Get().(*[]fabric.SendWR)
	*b = append((*b)[:0], wrs...)
	p.lanes[q%len(p.lanes)] <- postBatch{q: q, wrs: b}
	return nil
}

func (p *posters) Failed() context.Context { return p.failedAt }
func (p *posters) Threads() int            { return len(p.lanes) }

func (p *posters) Stop() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	p.mu.Unlock()
	for _, ch := range p.lanes {
		close(ch)
	}
	p.wg.Wait()
}

func (p *posters) TakeFailures() []fabric.PostFailure {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.failures
	p.failures = nil
	return f
}
