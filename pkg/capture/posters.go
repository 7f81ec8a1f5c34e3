package capture

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
)

// postLanes post the sender's work requests from one OS thread per CPU of
// SenderConfig.PostCPUs, each pinned there; queue pair q is always posted
// from thread q mod len(PostCPUs), so each queue pair's doorbells still come
// from one CPU, in order.
//
// Why: on a software RDMA device (rxe) the doorbell runs the queue pair's
// transmit path in the posting thread, and the packets' receive,
// acknowledgement and completion paths follow on the same CPU. A sender that
// posts from one thread therefore keeps one CPU busy while the others idle.
//
// The sender's loop stays the only owner of its state: it hands each batch
// over and counts it in flight at once. A post that fails is reported back
// (failed) with the number of work requests it did not post; after a
// failure a thread posts nothing more and reports every later batch too.
//
// Two kinds implement it: posters, goroutines locked to their threads, for
// any Endpoint; and an endpoint's own threads (threadPoster), which the
// verbs endpoint runs outside the Go scheduler (verbs.PostThread).
type postLanes interface {
	// post hands a copy of wrs (queue pair q's, in order) to q's thread. An
	// error means they were not handed over.
	post(q int, wrs []SendWR) error
	// failed is done at the first failed post.
	failed() context.Context
	// stop lets every thread post what it was handed and waits for them;
	// idempotent.
	stop()
	// takeFailures returns the failures reported so far and forgets them.
	takeFailures() []postFailure
	// threads is the number of posting threads.
	threads() int
}

// threadPoster is an Endpoint with posting threads of its own.
type threadPoster interface {
	startPostThreads(cpus []int, depth int, log *slog.Logger) (postLanes, error)
}

// startLanes starts the posting threads: the endpoint's own when it has
// them, else posters. depth bounds the work requests ever handed over and
// not yet posted.
func startLanes(ep Endpoint, cpus []int, depth int, log *slog.Logger) (postLanes, error) {
	if tp, ok := ep.(threadPoster); ok {
		return tp.startPostThreads(cpus, depth, log)
	}
	return startPosters(ep, cpus, depth, log)
}

// posters are postLanes on goroutines locked to their OS threads.
type posters struct {
	ep    Endpoint
	lanes []chan postBatch
	wg    sync.WaitGroup
	free  sync.Pool // *[]SendWR

	mu       sync.Mutex
	failures []postFailure
	failedAt context.Context // done at the first failure
	fail     context.CancelFunc
	stopped  bool
}

type postBatch struct {
	q   int
	wrs *[]SendWR
}

// postFailure is a batch a posting thread did not post.
type postFailure struct {
	q   int
	n   int // work requests in the batch
	err error
}

// startPosters starts one posting thread per CPU; depth bounds the batches
// ever handed over and not yet posted (the sender's send slots), so handing
// over never blocks.
func startPosters(ep Endpoint, cpus []int, depth int, log *slog.Logger) (*posters, error) {
	p := &posters{ep: ep}
	p.failedAt, p.fail = context.WithCancel(context.Background())
	p.free.New = func() any { return new([]SendWR) }
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
		p.stop()
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
				err = postError(b.q, wrs, err)
				broken = err
			}
		}
		if err != nil {
			p.mu.Lock()
			p.failures = append(p.failures, postFailure{q: b.q, n: len(wrs), err: err})
			p.mu.Unlock()
			p.fail()
		}
		*b.wrs = wrs[:0]
		p.free.Put(b.wrs)
	}
}

func (p *posters) post(q int, wrs []SendWR) error {
	b := p.free.Get().(*[]SendWR)
	*b = append((*b)[:0], wrs...)
	p.lanes[q%len(p.lanes)] <- postBatch{q: q, wrs: b}
	return nil
}

func (p *posters) failed() context.Context { return p.failedAt }
func (p *posters) threads() int            { return len(p.lanes) }

func (p *posters) stop() {
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

func (p *posters) takeFailures() []postFailure {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.failures
	p.failures = nil
	return f
}
