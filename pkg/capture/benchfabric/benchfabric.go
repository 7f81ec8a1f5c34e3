package benchfabric

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/rdma/verbs"
)

// The verbs adapter (pkg/capture/verbsfabric over pkg/rdma/verbs) crosses
// into C once per completion queue it polls (in turn, until the caller's
// completions are full) and once per postChunk work requests it posts; the
// benchmark fabric makes the same crossings, into a no-op (verbs.Noop), so
// that their cost is in the figures. verbs.Crossings counts both: the VM
// tier checks the adapter against this model on rxe
// (pkg/capture/verbsfabric, TestVMCrossingsPerMessage).
const postChunk = 256

// crossPost makes the crossings a post of n work requests makes.
func crossPost(n int) {
	for range (n + postChunk - 1) / postChunk {
		verbs.Noop()
	}
}

// Receiver is a fabric.ReceiverFabric over a ring of nbufs blocks of bufSize
// bytes, registered (in name only) as one WholeRing region.
type Receiver struct {
	nbufs, bufSize uint64
	msgBytes       uint64
	mode           wire.Mode
	granted        atomic.Uint64 // write mode: blocks granted so far
}

// NewReceiver returns the receiver's benchmark fabric for a ring of nbufs
// blocks of bufSize bytes and a stream of msgBytes messages in mode.
func NewReceiver(mode wire.Mode, nbufs, bufSize, msgBytes uint64) *Receiver {
	return &Receiver{nbufs: nbufs, bufSize: bufSize, msgBytes: msgBytes, mode: mode}
}

// Grant records that the engine granted block seq of the stream of the
// endpoint opened last (a write-mode credit the benchmark's peer read and
// will write): its completion may then arrive. Grants come in sequence order.
func (f *Receiver) Grant(seq uint64) { f.granted.Store(seq + 1) }

const regionAddr, regionKey = 0x10000000, 1

// Open creates an endpoint of cfg.QPs queue pairs.
func (f *Receiver) Open(_ context.Context, cfg fabric.EndpointConfig) (fabric.Endpoint, error) {
	if cfg.QPs < 1 {
		return nil, fmt.Errorf("%d queue pairs", cfg.QPs)
	}
	f.granted.Store(0) // a new stream: its blocks count from 0
	g := wire.Geometry{BlockBytes: f.bufSize, MsgBytes: f.msgBytes, QPs: cfg.QPs, NBufs: int(f.nbufs)}
	e := &RecvEndpoint{f: f, rq: make([]recvQueue, cfg.QPs), spb: g.SlicesPerBlock(), cqs: 1}
	if cfg.CQPerQP {
		e.cqs = cfg.QPs
	}
	_, _, e.lastLen = g.Slice(e.spb - 1)
	return e, nil
}

// Registration describes the ring as one region.
func (f *Receiver) Registration() (wire.MRMode, []wire.Region, fabric.Registered) {
	n := f.nbufs * f.bufSize
	return wire.MRWholeRing, []wire.Region{{Addr: regionAddr, Len: n, RKey: regionKey}},
		fabric.Registered{Mode: fabric.MRWholeRing, Regions: 1, Bytes: n, Reason: "benchmark fabric (no data movement)"}
}

// Close does nothing.
func (f *Receiver) Close() error { return nil }

// Fabric is the verbs transport, which the benchmark fabric stands in for.
func (f *Receiver) Fabric() wire.Fabric { return wire.Fabric{Transport: wire.TransportVerbs} }

// recvQueue is one queue pair's posted receive work requests, oldest first.
type recvQueue struct {
	wrs  []fabric.RecvWR
	head int
}

func (q *recvQueue) push(wrs []fabric.RecvWR) {
	if q.head > 0 && q.head == len(q.wrs) {
		q.wrs, q.head = q.wrs[:0], 0
	}
	q.wrs = append(q.wrs, wrs...)
}

func (q *recvQueue) pop() (fabric.RecvWR, bool) {
	if q.head == len(q.wrs) {
		return fabric.RecvWR{}, false
	}
	wr := q.wrs[q.head]
	q.head++
	return wr, true
}

// RecvEndpoint is the receiver's endpoint: it is used by the engine's one
// receive goroutine.
type RecvEndpoint struct {
	f       *Receiver
	rq      []recvQueue
	next    int    // send mode: the queue pair Poll looks at first
	written uint64 // write mode: blocks completed
	spb     uint64 // slices per block
	lastLen uint64 // length of a block's last slice
	cqs     int    // completion queues the verbs adapter would poll
	closed  bool
}

// Local describes made-up queue pairs.
func (e *RecvEndpoint) Local() []wire.QPInfo { return localQPs(len(e.rq), 1000) }

// Connect checks the number of queue pairs.
func (e *RecvEndpoint) Connect(remote []wire.QPInfo) error { return connect(len(e.rq), remote) }

// PostRecv queues wrs on queue pair qp.
func (e *RecvEndpoint) PostRecv(qp int, wrs []fabric.RecvWR) error {
	if e.closed {
		return errors.New("post recv: endpoint closed")
	}
	crossPost(len(wrs))
	e.rq[qp].push(wrs)
	return nil
}

// PostSend is not used by the receiver.
func (e *RecvEndpoint) PostSend(int, []fabric.SendWR) error {
	return errors.New("post send: the receiver's benchmark endpoint does not send")
}

// Poll completes posted receives: in send mode every posted one, taking the
// queue pairs in turn as a shared completion queue interleaves them (or, with
// a completion queue per queue pair, queue pair after queue pair, as the
// verbs adapter polls them); in write mode one per granted block, on the
// queue pair that carried it.
func (e *RecvEndpoint) Poll(wcs []fabric.Completion) (int, error) {
	switch {
	case e.f.mode == wire.ModeWrite:
		for range e.cqs {
			verbs.Noop()
		}
		return e.pollWrite(wcs), nil
	case e.cqs > 1:
		return e.pollPerQP(wcs), nil
	}
	verbs.Noop()
	n, idle := 0, 0
	for n < len(wcs) && idle < len(e.rq) {
		q := e.next
		e.next = (e.next + 1) % len(e.rq)
		wr, ok := e.rq[q].pop()
		if !ok {
			idle++
			continue
		}
		idle = 0
		wcs[n] = sendCompletion(q, wr)
		n++
	}
	return n, nil
}

// pollPerQP is send mode's Poll with a completion queue per queue pair: like
// the verbs adapter it polls them in turn, from the one after the queue
// pair it polled last, each once (one crossing), until wcs is full.
func (e *RecvEndpoint) pollPerQP(wcs []fabric.Completion) int {
	n := 0
	for range e.rq {
		if n == len(wcs) {
			break
		}
		q := e.next
		e.next = (e.next + 1) % len(e.rq)
		verbs.Noop()
		for n < len(wcs) {
			wr, ok := e.rq[q].pop()
			if !ok {
				break
			}
			wcs[n] = sendCompletion(q, wr)
			n++
		}
	}
	return n
}

// sendCompletion is the completion of receive wr on queue pair q (send
// mode): the whole slice, its number as the immediate.
func sendCompletion(q int, wr fabric.RecvWR) fabric.Completion {
	return fabric.Completion{ID: wr.ID, QP: q, Recv: true, Bytes: uint32(wr.Length), Imm: uint32(wr.ID)}
}

// pollWrite completes the granted blocks not completed yet: block k was
// written whole on queue pair k mod QPs, its last slice with an immediate.
func (e *RecvEndpoint) pollWrite(wcs []fabric.Completion) int {
	n, granted := 0, e.f.granted.Load()
	for n < len(wcs) && e.written < granted {
		q := int(e.written % uint64(len(e.rq)))
		if _, ok := e.rq[q].pop(); !ok {
			break // no receive posted: the sender waits (receiver not ready)
		}
		last := (e.written+1)*e.spb - 1
		wcs[n] = fabric.Completion{ID: uint64(q), QP: q, Recv: true, Bytes: uint32(e.lastLen), Imm: uint32(last)}
		e.written++
		n++
	}
	return n
}

// Close forgets the posted receives; idempotent.
func (e *RecvEndpoint) Close() error {
	e.closed = true
	return nil
}

// Sender is a fabric.SenderFabric whose sends complete at once.
type Sender struct {
	buf    []byte
	imms   atomic.Uint64 // RDMA_WRITE_WITH_IMM work requests posted
	landed chan struct{}
}

// NewSender returns the sender's benchmark fabric with buf as its buffer.
func NewSender(buf []byte) *Sender { return &Sender{buf: buf, landed: make(chan struct{}, 1)} }

// WriteImms is the number of RDMA_WRITE_WITH_IMM work requests posted so far:
// in write mode, the blocks a receiver would have seen land, for a
// benchmark's peer that grants blocks as they come free.
func (f *Sender) WriteImms() uint64 { return f.imms.Load() }

// Landed delivers a value after WriteImms grew (values may merge).
func (f *Sender) Landed() <-chan struct{} { return f.landed }

// Open creates an endpoint of cfg.QPs queue pairs.
func (f *Sender) Open(_ context.Context, cfg fabric.EndpointConfig) (fabric.Endpoint, error) {
	if cfg.QPs < 1 {
		return nil, fmt.Errorf("%d queue pairs", cfg.QPs)
	}
	return &SendEndpoint{f: f, qps: cfg.QPs}, nil
}

// Buffer is the send buffer.
func (f *Sender) Buffer() []byte { return f.buf }

// Close does nothing.
func (f *Sender) Close() error { return nil }

// Fabric is the verbs transport, which the benchmark fabric stands in for.
func (f *Sender) Fabric() wire.Fabric { return wire.Fabric{Transport: wire.TransportVerbs} }

// SendEndpoint is the sender's endpoint. PostSend may run on several
// goroutines (the sender's posting threads), as on a verbs endpoint.
type SendEndpoint struct {
	f      *Sender
	qps    int
	mu     sync.Mutex
	cq     []fabric.Completion
	head   int
	closed bool
}

// Local describes made-up queue pairs.
func (e *SendEndpoint) Local() []wire.QPInfo { return localQPs(e.qps, 2000) }

// Connect checks the number of queue pairs.
func (e *SendEndpoint) Connect(remote []wire.QPInfo) error { return connect(e.qps, remote) }

// PostRecv accepts and forgets receives (the sender posts none that complete).
func (e *SendEndpoint) PostRecv(int, []fabric.RecvWR) error { return nil }

// PostSend completes wrs at once: a completion for each signalled one.
func (e *SendEndpoint) PostSend(qp int, wrs []fabric.SendWR) error {
	crossPost(len(wrs))
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("post send: endpoint closed")
	}
	if e.head > 0 && e.head == len(e.cq) {
		e.cq, e.head = e.cq[:0], 0
	}
	imms := uint64(0)
	for i := range wrs {
		if wrs[i].Signaled {
			e.cq = append(e.cq, fabric.Completion{ID: wrs[i].ID, QP: qp})
		}
		if wrs[i].Op == fabric.OpWriteImm {
			imms++
		}
	}
	if imms > 0 {
		e.f.imms.Add(imms)
		select {
		case e.f.landed <- struct{}{}:
		default:
		}
	}
	return nil
}

// Poll returns the completions of the sends posted so far.
func (e *SendEndpoint) Poll(wcs []fabric.Completion) (int, error) {
	verbs.Noop() // one completion queue: the sender's
	e.mu.Lock()
	defer e.mu.Unlock()
	n := copy(wcs, e.cq[e.head:])
	e.head += n
	return n, nil
}

// Close stops accepting sends; idempotent.
func (e *SendEndpoint) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	return nil
}

func localQPs(n int, base uint32) []wire.QPInfo {
	out := make([]wire.QPInfo, n)
	for i := range out {
		out[i] = wire.QPInfo{QPN: base + uint32(i), PSN: base + uint32(i), MTU: 4096}
	}
	return out
}

func connect(n int, remote []wire.QPInfo) error {
	if len(remote) != n {
		return fmt.Errorf("%d remote queue pairs for %d local", len(remote), n)
	}
	return nil
}
