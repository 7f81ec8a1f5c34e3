package ofifabric

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/rdma/ofi"
)

// qp is one "queue pair": an RDM endpoint with its own address vector and
// completion queue, talking to one peer endpoint. mu serialises its
// libfabric calls and guards tx, stash, buf and ops.
type qp struct {
	mu    *sync.Mutex
	av    *ofi.AV
	cq    *ofi.CQ
	ep    *ofi.Endpoint
	name  []byte
	peer  ofi.Addr
	tx    txOrder
	stash []fabric.Completion // translated, not yet returned by Poll
	buf   []ofi.Completion
	ops   []ofi.Op
}

// endpoint is N RDM endpoints. Each has a lock of its own where the
// domain's threading model lets endpoints run on different threads at once
// (ofi.Threading.PerEndpoint), else they share one: PostSend on different
// endpoints (the sender's posting threads) then runs in parallel, and Poll
// skips an endpoint a post holds.
type endpoint struct {
	d    *ofi.Domain
	recv bool // receiver side: every completion is a receive
	// set is the completion queues' wait fds (nil: the provider gave none,
	// noWait says why, and both sides poll); the receiver sleeps on it in
	// w's goroutine (Notifier), the sender in PollWait (Waiter).
	set    *cqSet
	noWait string
	w      *waiter
	// wideData: remote CQ data has 8 bytes, and a write's length rides in
	// its upper half (see writeData).
	wideData bool

	qps     []*qp
	locks   []*sync.Mutex                            // the distinct locks of qps, in order
	rxBlock func(block int, off, n uint64) ofi.Local // receiver: ring memory
	postImm bool                                     // FI_RX_CQ_DATA: an immediate consumes a posted receive
	immRecv ofi.Local                                // what such a receive points at (0 bytes)
	sendMR  *ofi.MR                                  // sender: the send buffer
	lenRx   *lenRx                                   // receiver with length messages: their words (slots per endpoint)
	lenTx   *lenWords                                // sender with length messages: their words (slots per endpoint)
	allCQs  []*ofi.CQ                                // every endpoint's, for fi_trywait
	closed  atomic.Bool                              // set with every lock held
	lanes   atomic.Pointer[lanes]                    // the sender's posting threads, while they run

	pollMu  sync.Mutex // Poll's round robin
	next    int
	closeMu sync.Mutex // one Close at a time
}

// errClosed is what calls on a closed endpoint fail with.
var errClosed = errors.New("endpoint closed")

func newEndpoint(d *ofi.Domain, cfg fabric.EndpointConfig, recv bool) (_ *endpoint, err error) {
	if cfg.QPs < 1 || cfg.QPs > wire.MaxQPs {
		return nil, fmt.Errorf("open %d endpoints: want 1..%d", cfg.QPs, wire.MaxQPs)
	}
	ep := &endpoint{d: d, recv: recv, wideData: d.Info().CQDataSize >= 8}
	defer func() {
		if err != nil { // ep, not the nil result: the partial endpoints close
			_ = ep.Close()
		}
	}()
	size := max(2*(cfg.SendDepth+cfg.RecvDepth), 256)
	for i := range cfg.QPs {
		q := &qp{mu: ep.lockFor(i), buf: make([]ofi.Completion, 64)}
		ep.qps = append(ep.qps, q)
		if q.av, err = d.OpenAV(1); err != nil {
			return nil, fmt.Errorf("endpoint %d of %d: %w", i, cfg.QPs, err)
		}
		if q.cq, err = d.OpenCQ(ofi.CQConfig{Size: size, WaitFD: true}); err != nil {
			return nil, fmt.Errorf("endpoint %d of %d: %w", i, cfg.QPs, err)
		}
		if q.ep, err = d.OpenEndpoint(ofi.EndpointConfig{AV: q.av, TxCQ: q.cq, RxCQ: q.cq}); err != nil {
			return nil, fmt.Errorf("endpoint %d of %d: %w", i, cfg.QPs, err)
		}
		if q.name, err = q.ep.Name(); err != nil {
			return nil, fmt.Errorf("endpoint %d of %d: %w", i, cfg.QPs, err)
		}
		if len(q.name) > wire.MaxAddrBytes {
			return nil, fmt.Errorf("endpoint %d: its %d-byte address exceeds the handshake's %d bytes", i, len(q.name), wire.MaxAddrBytes)
		}
	}
	ep.allCQs = ep.cqs()
	if ep.set, err = newCQSet(ep.allCQs); err != nil {
		ep.noWait, err = err.Error(), nil // without them both sides poll
	} else if recv {
		ep.w = newWaiter(ep.set)
	}
	return ep, nil
}

// lockFor is the lock of endpoint i: a new one per endpoint where the
// domain's threading model allows, else the first endpoint's.
func (ep *endpoint) lockFor(i int) *sync.Mutex {
	if i == 0 || ep.d.Info().Threading.PerEndpoint() {
		ep.locks = append(ep.locks, new(sync.Mutex))
	}
	return ep.locks[len(ep.locks)-1]
}

// lockAll takes every endpoint's lock, in order; unlockAll releases them.
func (ep *endpoint) lockAll() {
	for _, m := range ep.locks {
		m.Lock()
	}
}

func (ep *endpoint) unlockAll() {
	for _, m := range ep.locks {
		m.Unlock()
	}
}

func (ep *endpoint) cqs() []*ofi.CQ {
	cqs := make([]*ofi.CQ, len(ep.qps))
	for i, q := range ep.qps {
		cqs[i] = q.cq
	}
	return cqs
}

// Arm implements fabric.Notifier: after fi_trywait says nothing is ready,
// the next Events value comes when a completion queue's wait fd wakes;
// when something is ready, at once.
func (ep *endpoint) Arm() error {
	if ep.w == nil {
		return errors.New("arm: the completion queues have no wait fds")
	}
	sleep, err := ep.tryWait()
	switch {
	case err != nil:
		return err
	case sleep:
		ep.w.sleep()
	default:
		ep.w.notify()
	}
	return nil
}

// tryWait says, with every endpoint's lock held, whether the caller may
// sleep on the wait fds: not while a stash holds completions (a post read
// them), nor when fi_trywait says the completion queues must be read first.
func (ep *endpoint) tryWait() (bool, error) {
	ep.lockAll()
	defer ep.unlockAll()
	if ep.closed.Load() {
		return false, errClosed
	}
	for _, q := range ep.qps {
		if len(q.stash) > 0 {
			return false, nil
		}
	}
	switch err := ep.d.TryWait(ep.allCQs); {
	case errors.Is(err, ofi.ErrAgain):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// PollWait implements fabric.Waiter (the sender while every send slot is in
// flight): Poll, and while nothing is there sleep on the wait fds once
// tryWait allows, until one wakes, ctx is done or Close. ok is false on the
// receiver's side (its waiter sleeps on the set) and where the provider gave
// no wait fds.
func (ep *endpoint) PollWait(ctx context.Context, wcs []fabric.Completion) (int, bool, error) {
	if l := ep.lanes.Load(); l != nil {
		n, err := ep.pollWaitLanes(ctx, l, wcs)
		return n, true, err
	}
	if ep.set == nil || ep.recv {
		return 0, false, nil
	}
	for {
		n, err := ep.Poll(wcs)
		if n > 0 || err != nil {
			return n, true, err
		}
		sleep, err := ep.tryWait()
		if err != nil {
			return 0, true, fmt.Errorf("wait for completions: %w", err)
		}
		if !sleep {
			if err := ctx.Err(); err != nil {
				return 0, true, fmt.Errorf("wait for completions: %w", err)
			}
			continue
		}
		if err := ep.set.wait(ctx); err != nil {
			return 0, true, fmt.Errorf("wait for completions: %w", err)
		}
	}
}

// Events implements fabric.Notifier.
func (ep *endpoint) Events() <-chan struct{} {
	if ep.w == nil {
		return nil
	}
	return ep.w.events
}

// Local implements fabric.Endpoint: each endpoint's address.
func (ep *endpoint) Local() []wire.QPInfo {
	out := make([]wire.QPInfo, len(ep.qps))
	for i, q := range ep.qps {
		out[i] = wire.QPInfo{Addr: q.name}
	}
	return out
}

// Connect implements fabric.Endpoint: each peer address goes into its
// endpoint's address vector.
func (ep *endpoint) Connect(remote []wire.QPInfo) error {
	if len(remote) != len(ep.qps) {
		return fmt.Errorf("%d remote endpoints for %d local ones", len(remote), len(ep.qps))
	}
	ep.lockAll()
	defer ep.unlockAll()
	for i, q := range ep.qps {
		a, err := q.av.Insert(remote[i].Addr)
		if err != nil {
			return fmt.Errorf("endpoint %d: %w", i, err)
		}
		q.peer = a
	}
	return nil
}

// PostRecv implements fabric.Endpoint. A receive without a scatter entry
// (write mode) only exists where the provider's immediates consume one.
func (ep *endpoint) PostRecv(qi int, wrs []fabric.RecvWR) error {
	q := ep.qps[qi]
	q.mu.Lock()
	defer q.mu.Unlock()
	ops := q.ops[:0]
	for _, w := range wrs {
		o := ofi.Op{Kind: ofi.OpRecv, Peer: ofi.AddrUnspec, ID: w.ID}
		switch {
		case w.Length > 0:
			o.Local = ep.rxBlock(w.Block, w.Offset, w.Length)
		case ep.lenRx != nil:
			s, err := ep.lenRx.take(qi, w.ID)
			if err != nil {
				ep.giveBack(qi, ops)
				return err
			}
			o.Local, o.ID = ep.lenRx.w.local(s), uint64(s)
		case ep.postImm:
			o.Local = ep.immRecv
		default:
			continue
		}
		ops = append(ops, o)
	}
	q.ops = ops
	err := ep.post(qi, ops)
	if err != nil {
		ep.giveBack(qi, ops[postedOf(err):])
	}
	return err
}

// giveBack frees the length words of receives that were not posted.
func (ep *endpoint) giveBack(qi int, ops []ofi.Op) {
	if ep.lenRx == nil {
		return
	}
	for _, o := range ops {
		if o.Local.Len == lenBytes && o.Local.MR == ep.lenRx.w.mr {
			ep.lenRx.give(qi, int(o.ID))
		}
	}
}

// PostSend implements fabric.Endpoint: sends and writes carry the immediate
// as remote CQ data. Every operation completes (see txOrder).
func (ep *endpoint) PostSend(qi int, wrs []fabric.SendWR) error {
	q := ep.qps[qi]
	q.mu.Lock()
	defer q.mu.Unlock()
	ops := q.ops[:0]
	for _, w := range wrs {
		var err error
		if ops, err = ep.appendSend(qi, ops, w); err != nil {
			q.tx.drop(len(ops))
			return err
		}
	}
	q.ops = ops
	if err := ep.post(qi, ops); err != nil {
		q.tx.drop(len(ops) - postedOf(err))
		return err
	}
	return ep.progress(qi)
}

// progress reads endpoint qi's completion queue once after a post, keeping
// what it read for Poll: ofi_rxm advances an endpoint's protocol (its
// credits, acknowledgements and the writes' completions) only while its
// completion queue is read, so the thread that posts also progresses, as
// one thread per endpoint doing both does (docs/ofi.md). The caller holds
// its lock. It cannot hide a completion from a PollWait asleep: tryWait
// holds every lock, and what arrives after fi_trywait wakes the wait fd.
func (ep *endpoint) progress(qi int) error {
	if _, err := ep.read(qi); err != nil {
		return fmt.Errorf("progress after the post: %w", err)
	}
	return nil
}

// appendSend appends the operations of one work request on endpoint qi to
// ops, each with its sequence number in q.tx: one, or with length messages
// a plain write (none for 0 bytes) and the message for a write carrying an
// immediate.
func (ep *endpoint) appendSend(qi int, ops []ofi.Op, w fabric.SendWR) ([]ofi.Op, error) {
	q := ep.qps[qi]
	o := ofi.Op{Local: ep.sendMR.Local(w.Offset, int(w.Length)), Peer: q.peer, Data: uint64(w.Imm)}
	switch w.Op {
	case fabric.OpSendImm:
		o.Kind, o.HasData = ofi.OpSend, true
	case fabric.OpWriteImm:
		o.Kind, o.HasData, o.Remote = ofi.OpWrite, true, ofi.Remote{Addr: w.RemoteAddr, Key: w.RKey}
		o.Data = writeData(ep.wideData, w.Imm, w.Length)
		if ep.lenTx != nil {
			return ep.appendLenWrite(qi, ops, o, w)
		}
	case fabric.OpWrite:
		o.Kind, o.Remote = ofi.OpWrite, ofi.Remote{Addr: w.RemoteAddr, Key: w.RKey}
	default:
		return ops, fmt.Errorf("post send: unknown op %d", w.Op)
	}
	o.ID = q.tx.push(w.ID, w.Signaled)
	return append(ops, o), nil
}

// appendLenWrite appends write o, plain, and its length message (see
// lengthMessages); the message stands for the work request.
func (ep *endpoint) appendLenWrite(qi int, ops []ofi.Op, o ofi.Op, w fabric.SendWR) ([]ofi.Op, error) {
	q := ep.qps[qi]
	if w.Length > 0 {
		o.HasData, o.Data, o.ID = false, 0, q.tx.push(0, false)
		ops = append(ops, o)
	}
	if len(q.tx.pend) >= ep.lenTx.slots {
		return ops, fmt.Errorf("post send on endpoint %d: more than %d operations outstanding for length messages", qi, ep.lenTx.slots)
	}
	seq := q.tx.push(w.ID, w.Signaled)
	s := ep.lenTx.slot(qi, int(seq%uint64(ep.lenTx.slots)))
	ep.lenTx.put(s, uint32(w.Length))
	m := ofi.Op{Kind: ofi.OpSend, Local: ep.lenTx.local(s), Peer: q.peer, Data: uint64(w.Imm), HasData: true, ID: seq}
	return append(ops, m), nil
}

// stallLimit bounds how long a post waits for a provider that takes
// nothing (FI_EAGAIN) while no completion arrives: a peer that is gone.
const stallLimit = 30 * time.Second

// partialPost is a post that failed after n operations went out.
type partialPost struct {
	n   int
	err error
}

func (p *partialPost) Error() string { return p.err.Error() }
func (p *partialPost) Unwrap() error { return p.err }

func postedOf(err error) int {
	var p *partialPost
	if errors.As(err, &p) {
		return p.n
	}
	return 0
}

// post posts ops on endpoint qi, whose lock the caller holds; while the
// provider answers FI_EAGAIN it reads the endpoint's completion queue
// (libfabric progresses there), keeping what it read for Poll, and posts the
// rest.
func (ep *endpoint) post(qi int, ops []ofi.Op) error {
	if ep.closed.Load() {
		return fmt.Errorf("post: %w", errClosed)
	}
	done := 0
	last := time.Now()
	for done < len(ops) {
		n, err := ep.qps[qi].ep.Post(ops[done:])
		done += n
		if err == nil {
			break
		}
		if !errors.Is(err, ofi.ErrAgain) {
			return &partialPost{n: done, err: fmt.Errorf("endpoint %d: %w", qi, err)}
		}
		got, rerr := ep.read(qi)
		if rerr != nil {
			return &partialPost{n: done, err: rerr}
		}
		if n > 0 || got > 0 {
			last = time.Now()
		} else if time.Since(last) > stallLimit {
			return &partialPost{n: done, err: fmt.Errorf("endpoint %d: the provider took no operation and completed none for %v: %w", qi, stallLimit, err)}
		}
		runtime.Gosched()
	}
	return nil
}

// Poll implements fabric.Endpoint: each endpoint's completions, round robin
// from where the last Poll stopped. An endpoint whose lock a post holds is
// skipped (Poll does not block): the post reads its completion queue when
// the provider is busy, and its completions wait for the next Poll.
func (ep *endpoint) Poll(wcs []fabric.Completion) (int, error) {
	ep.pollMu.Lock()
	defer ep.pollMu.Unlock()
	if l := ep.lanes.Load(); l != nil {
		n, _, err := ep.pollLanes(l, wcs)
		return n, err
	}
	return ep.takeRound(wcs, true)
}

// takeRound moves the endpoints' completions into wcs, round robin from
// where the last round stopped, reading each completion queue first when
// read says so; the caller holds pollMu. An endpoint whose lock is held is
// skipped.
func (ep *endpoint) takeRound(wcs []fabric.Completion, read bool) (int, error) {
	n := 0
	for range ep.qps {
		if n == len(wcs) {
			break
		}
		qi := ep.next
		ep.next = (ep.next + 1) % len(ep.qps)
		q := ep.qps[qi]
		if !q.mu.TryLock() {
			continue
		}
		k, err := ep.take(qi, wcs[n:], read)
		q.mu.Unlock()
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// take moves endpoint qi's completions into wcs, reading its completion
// queue first (with read) unless the stash already fills wcs; the caller
// holds its lock.
func (ep *endpoint) take(qi int, wcs []fabric.Completion, read bool) (int, error) {
	q := ep.qps[qi]
	if read && len(q.stash) < len(wcs) && !ep.closed.Load() {
		if _, err := ep.read(qi); err != nil {
			return 0, err
		}
	}
	n := copy(wcs, q.stash)
	q.stash = q.stash[:copy(q.stash, q.stash[n:])]
	return n, nil
}

// read reads endpoint qi's completion queue once into its stash; it returns
// the entries read. The caller holds the endpoint's lock.
func (ep *endpoint) read(qi int) (int, error) {
	q := ep.qps[qi]
	n, err := q.cq.Read(q.buf)
	if err != nil {
		return 0, fmt.Errorf("endpoint %d: %w", qi, err)
	}
	for _, c := range q.buf[:n] {
		ep.translate(qi, c)
	}
	return n, nil
}

// translate turns one libfabric completion of endpoint qi into the
// engine's, in the stash: receives (and remote writes) at once, transmit
// completions in posting order, signalled ones only.
func (ep *endpoint) translate(qi int, c ofi.Completion) {
	q := ep.qps[qi]
	switch {
	case c.Err != nil:
		id := c.ID
		if ep.lenRx != nil {
			id, _ = ep.lenRx.give(qi, int(c.ID))
		}
		q.stash = append(q.stash, fabric.Completion{ID: id, QP: qi, Recv: ep.recv,
			Err: &fabric.WCError{QP: qi, Status: c.Err.Error(), Recv: ep.recv}})
	case c.Flags&ofi.CapRemoteWrite != 0 && ep.wideData:
		q.stash = append(q.stash, fabric.Completion{ID: c.ID, QP: qi, Recv: true, Bytes: uint32(c.Data >> 32), Imm: uint32(c.Data)})
	case c.Flags&ofi.CapRemoteWrite != 0:
		// Its length is not known (see lengthMessages): the sender broke
		// the agreement.
		q.stash = append(q.stash, fabric.Completion{ID: c.ID, QP: qi, Recv: true, Err: &fabric.WCError{QP: qi, Recv: true,
			Status: fmt.Sprintf("a remote write carried immediate %d where its length travels in a length message", uint32(c.Data))}})
	case c.Flags&ofi.CapRecv != 0 && ep.lenRx != nil:
		q.stash = append(q.stash, ep.lenMessage(qi, c))
	case c.Flags&ofi.CapRecv != 0:
		q.stash = append(q.stash, fabric.Completion{ID: c.ID, QP: qi, Recv: true, Bytes: uint32(c.Len), Imm: uint32(c.Data)})
	default:
		q.stash = q.tx.complete(c.ID, qi, q.stash)
	}
}

// lenMessage is the engine's completion for a length message received on
// endpoint qi: the immediate and the length of the write before it.
func (ep *endpoint) lenMessage(qi int, c ofi.Completion) fabric.Completion {
	s := int(c.ID)
	id, ok := ep.lenRx.give(qi, s)
	switch {
	case !ok:
		return fabric.Completion{ID: c.ID, QP: qi, Recv: true, Err: &fabric.WCError{QP: qi, Recv: true,
			Status: fmt.Sprintf("a length message completed a receive (%d) this endpoint did not post", c.ID)}}
	case c.Len != lenBytes || !c.HasData:
		return fabric.Completion{ID: id, QP: qi, Recv: true, Err: &fabric.WCError{QP: qi, Recv: true,
			Status: fmt.Sprintf("a length message of %d bytes (CQ data %v), want %d bytes with CQ data", c.Len, c.HasData, lenBytes)}}
	}
	return fabric.Completion{ID: id, QP: qi, Recv: true, Bytes: ep.lenRx.w.get(s), Imm: uint32(c.Data)}
}

// writeData is the remote CQ data of a write carrying the immediate imm and
// n bytes: with 8 bytes of CQ data the length rides in the upper half, since
// a remote write's completion length is not reliable across providers
// (tcp;ofi_rxm in libfabric 1.17 reports 0, verbs;ofi_rxm on rxe the receive
// buffer's size); with fewer, a length message carries it.
func writeData(wide bool, imm uint32, n uint64) uint64 {
	if wide {
		return uint64(imm) | n<<32
	}
	return uint64(imm)
}

// Close closes every endpoint, then the address vectors and completion
// queues; idempotent. It waits for posts and polls in progress (it takes
// every lock); later ones fail.
func (ep *endpoint) Close() error {
	ep.closeMu.Lock()
	defer ep.closeMu.Unlock()
	if ep.closed.Load() {
		return nil
	}
	if l := ep.lanes.Load(); l != nil {
		l.Stop() // the threads end before the endpoints they drive
	}
	if ep.w != nil {
		ep.w.close()
	}
	ep.set.close() // before the completion queues whose fds it holds; wakes a PollWait
	ep.lockAll()
	defer ep.unlockAll()
	ep.closed.Store(true)
	ep.drain()
	var errs []error
	for _, q := range ep.qps {
		errs = append(errs, q.ep.Close())
	}
	for _, q := range ep.qps {
		errs = append(errs, q.av.Close(), q.cq.Close())
	}
	if ep.lenRx != nil {
		errs = append(errs, ep.lenRx.w.close())
	}
	errs = append(errs, ep.lenTx.close())
	return errors.Join(errs...)
}

// Draining before close: ofi_rxm handles the messages its peer's rxm sends
// on its own (credits, acknowledgements) only while the application reads
// the completion queue, at most a few per read and none of them reported.
// Closing an endpoint with such a message still queued makes rxm handle it
// after it closed the core endpoint it reposts the receive buffer on: a
// SIGSEGV in fi_close (libfabric 1.17, verbs;ofi_rxm on rxe: a NULL receive
// operation of the closed verbs endpoint; upstream issue ofiwg/libfabric#11828).
const (
	drainQuiet = 256   // reads that return nothing before a queue counts as drained
	drainMax   = 16384 // reads of one queue at most
)

// drain reads every completion queue until drainQuiet reads in a row return
// nothing (drainMax at most), discarding what it reads: the endpoint is
// closing, and no operation of the engine is outstanding any more.
func (ep *endpoint) drain() {
	buf := make([]ofi.Completion, 64)
	for _, q := range ep.qps {
		quiet := 0
		for i := 0; i < drainMax && quiet < drainQuiet; i++ {
			n, err := q.cq.Read(buf)
			if err != nil {
				break
			}
			quiet++
			if n > 0 {
				quiet = 0
			}
		}
	}
}

// txOrder is an endpoint's transmit operations in posting order. Each
// operation's libfabric context is its sequence number; a signalled one's
// completion reaches the engine once every operation posted before it has
// completed, as on an RC queue pair.
type txOrder struct {
	head uint64 // sequence number of pend[0]
	pend []txOp
}

type txOp struct {
	id       uint64 // the engine's work-request ID
	signaled bool
	done     bool
}

// push records an operation and returns its sequence number.
func (t *txOrder) push(id uint64, signaled bool) uint64 {
	t.pend = append(t.pend, txOp{id: id, signaled: signaled})
	return t.head + uint64(len(t.pend)-1)
}

// drop forgets the last n operations (they were not posted).
func (t *txOrder) drop(n int) { t.pend = t.pend[:len(t.pend)-n] }

// complete marks operation seq done and appends the signalled completions
// it releases, in order, to out.
func (t *txOrder) complete(seq uint64, qi int, out []fabric.Completion) []fabric.Completion {
	if seq < t.head || seq-t.head >= uint64(len(t.pend)) {
		return out // not ours (already released): nothing to do
	}
	t.pend[seq-t.head].done = true
	k := 0
	for k < len(t.pend) && t.pend[k].done {
		if t.pend[k].signaled {
			out = append(out, fabric.Completion{ID: t.pend[k].id, QP: qi})
		}
		k++
	}
	t.pend = t.pend[k:]
	t.head += uint64(k)
	return out
}
