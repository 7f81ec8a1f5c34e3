package memfabric

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// Net is an in-memory RC network: the queue pairs of every Endpoint opened
// on it can connect to each other. Set its hooks before the first endpoint
// is opened.
type Net struct {
	mu   sync.Mutex
	qps  map[uint32]*memQP
	next uint32
	seed atomic.Uint64
	// Hook, when set, runs before each send WR is delivered, on the goroutine
	// of the sending queue pair (index qp): blocking in it stalls that queue
	// pair alone, as a retransmission timeout does on a real link.
	Hook func(qp int, wr fabric.SendWR)
	// Blackhole makes send WRs to a closed peer vanish without a completion,
	// as on rxe with retry count 7 (retry forever); otherwise they fail with
	// IBV_WC_RETRY_EXC_ERR.
	Blackhole bool
	// Posted, when set, learns the size of each PostSend, on the poster's
	// goroutine.
	Posted func(qp, n int)
	// PostErr, when set, is asked before each PostSend (on the poster's
	// goroutine) and fails it, posting nothing, when it returns an error.
	PostErr func(qp, n int) error
	arms    atomic.Int64
	rnr     atomic.Int64
}

// NewNet returns an empty network.
func NewNet() *Net { return &Net{qps: map[uint32]*memQP{}, next: 100} }

// Arms counts the Arm calls of the network's endpoints: how often a receive
// loop got ready to sleep.
func (n *Net) Arms() int64 { return n.arms.Load() }

// RNR counts the SENDs that found no receive WR posted on their queue pair
// when they arrived: what an RC responder answers with a receiver-not-ready
// NAK. The send is then retried until a receive WR is posted, as with
// rnr_retry 7, and counted once.
func (n *Net) RNR() int64 { return n.rnr.Load() }

// Endpoint is one side's queue pairs on a Net; it implements fabric.Endpoint
// and fabric.Notifier, as a verbs endpoint with one completion queue does.
type Endpoint struct {
	n      *Net
	qps    []*memQP
	cq     chan fabric.Completion
	closed atomic.Bool
	wg     sync.WaitGroup
	mem    memoryTarget // receiver side: ring blocks
	buf    []byte       // sender side: send buffer
	once   sync.Once
	armed  atomic.Bool
	events chan struct{}
}

// Arm requests an event on Events for the next completion.
func (e *Endpoint) Arm() error { e.n.arms.Add(1); e.armed.Store(true); return nil }

// Events delivers a value after each completion Arm asked for.
func (e *Endpoint) Events() <-chan struct{} { return e.events }

type memoryTarget interface {
	block(i int) []byte
	resolve(addr uint64, rkey uint64, n uint64) ([][]byte, error)
}

type memQP struct {
	ep   *Endpoint
	idx  int
	qpn  uint32
	peer *memQP
	mu   sync.Mutex
	rq   []fabric.RecvWR
	sq   chan fabric.SendWR
}

// Open opens a sender-side endpoint whose send work requests take their
// bytes from buf (nil: an endpoint that only takes part in a handshake).
func (n *Net) Open(cfg fabric.EndpointConfig, buf []byte) *Endpoint { return n.open(cfg, nil, buf) }

// Buffer is the memory the endpoint's send work requests take their bytes
// from (Open's buf).
func (e *Endpoint) Buffer() []byte { return e.buf }

func (n *Net) open(cfg fabric.EndpointConfig, mem memoryTarget, buf []byte) *Endpoint {
	ep := &Endpoint{n: n, cq: make(chan fabric.Completion, cfg.QPs*(cfg.SendDepth+cfg.RecvDepth)+16), mem: mem, buf: buf, events: make(chan struct{}, 1)}
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := range cfg.QPs {
		q := &memQP{ep: ep, idx: i, qpn: n.next, sq: make(chan fabric.SendWR, cfg.SendDepth)}
		n.next++
		n.qps[q.qpn] = q
		ep.qps = append(ep.qps, q)
	}
	return ep
}

func (e *Endpoint) Local() []wire.QPInfo {
	out := make([]wire.QPInfo, len(e.qps))
	for i, q := range e.qps {
		out[i] = wire.QPInfo{QPN: q.qpn, PSN: q.qpn & 0xffffff, MTU: 4096}
	}
	return out
}

func (e *Endpoint) Connect(remote []wire.QPInfo) error {
	if len(remote) != len(e.qps) {
		return fmt.Errorf("%d remote queue pairs for %d local", len(remote), len(e.qps))
	}
	e.n.mu.Lock()
	for i, r := range remote {
		p, ok := e.n.qps[r.QPN]
		if !ok {
			e.n.mu.Unlock()
			return fmt.Errorf("modify QP %d to RTR: no remote QP %d", i, r.QPN)
		}
		e.qps[i].peer = p
	}
	e.n.mu.Unlock()
	for _, q := range e.qps {
		e.wg.Add(1)
		go q.deliver(rand.New(rand.NewPCG(e.n.seed.Add(1), uint64(q.qpn))))
	}
	return nil
}

func (e *Endpoint) PostRecv(qp int, wrs []fabric.RecvWR) error {
	if e.closed.Load() {
		return errors.New("post recv: endpoint closed")
	}
	q := e.qps[qp]
	q.mu.Lock()
	q.rq = append(q.rq, wrs...)
	q.mu.Unlock()
	return nil
}

func (e *Endpoint) PostSend(qp int, wrs []fabric.SendWR) error {
	if e.closed.Load() {
		return errors.New("post send: endpoint closed")
	}
	if e.n.PostErr != nil {
		if err := e.n.PostErr(qp, len(wrs)); err != nil {
			return err
		}
	}
	if e.n.Posted != nil {
		e.n.Posted(qp, len(wrs))
	}
	for _, wr := range wrs {
		e.qps[qp].sq <- wr
	}
	return nil
}

func (e *Endpoint) Poll(wcs []fabric.Completion) (int, error) {
	n := 0
	for n < len(wcs) {
		select {
		case wc := <-e.cq:
			wcs[n] = wc
			n++
		default:
			return n, nil
		}
	}
	return n, nil
}

func (e *Endpoint) Close() error {
	e.once.Do(func() {
		e.closed.Store(true)
		for _, q := range e.qps {
			close(q.sq)
		}
		e.wg.Wait()
		e.n.mu.Lock()
		for _, q := range e.qps {
			delete(e.n.qps, q.qpn)
		}
		e.n.mu.Unlock()
	})
	return nil
}

func (e *Endpoint) complete(wc fabric.Completion) {
	if !e.closed.Load() {
		select {
		case e.cq <- wc:
		default:
			panic("memfabric: completion queue overrun")
		}
		if e.armed.CompareAndSwap(true, false) {
			select {
			case e.events <- struct{}{}:
			default:
			}
		}
	}
}

// writeRemote copies an RDMA WRITE's bytes to where its remote address and
// rkey point in the peer's memory.
func (q *memQP) writeRemote(wr fabric.SendWR) error {
	dsts, err := q.peer.ep.mem.resolve(wr.RemoteAddr, wr.RKey, wr.Length)
	if err != nil {
		return err
	}
	src := q.ep.buf[wr.Offset : wr.Offset+wr.Length]
	for _, d := range dsts {
		src = src[copy(d, src):]
	}
	return nil
}

func (q *memQP) deliver(rng *rand.Rand) {
	defer q.ep.wg.Done()
	for wr := range q.sq {
		if h := q.ep.n.Hook; h != nil {
			h(q.idx, wr)
		}
		if rng.IntN(4) == 0 {
			time.Sleep(time.Duration(rng.IntN(50)) * time.Microsecond) // shuffle queue pairs
		}
		if wr.Op == fabric.OpWrite {
			q.deliverWrite(wr)
		} else {
			q.deliverToReceive(wr)
		}
	}
}

// deliverWrite lands an RDMA WRITE without a receive WR or a completion at the peer.
func (q *memQP) deliverWrite(wr fabric.SendWR) {
	p := q.peer
	if p.ep.closed.Load() && !q.ep.closed.Load() && !q.ep.n.Blackhole {
		q.ep.complete(fabric.Completion{ID: wr.ID, QP: q.idx, Err: &fabric.WCError{QP: q.idx, Status: "IBV_WC_RETRY_EXC_ERR"}})
	}
	if q.ep.closed.Load() || p.ep.closed.Load() {
		return
	}
	if err := q.writeRemote(wr); err != nil {
		q.ep.complete(fabric.Completion{ID: wr.ID, QP: q.idx, Err: &fabric.WCError{QP: q.idx, Status: "IBV_WC_REM_ACCESS_ERR"}})
		return
	}
	if wr.Signaled {
		q.ep.complete(fabric.Completion{ID: wr.ID, QP: q.idx})
	}
}

// takeReceive waits for the peer's next receive WR (receiver-not-ready: retry until one is
// posted); false when either side closed meanwhile.
func (q *memQP) takeReceive(wr fabric.SendWR) (fabric.RecvWR, bool) {
	p := q.peer
	for try := 0; !q.ep.closed.Load(); try++ {
		if p.ep.closed.Load() {
			if !q.ep.n.Blackhole {
				q.ep.complete(fabric.Completion{ID: wr.ID, QP: q.idx, Err: &fabric.WCError{QP: q.idx, Status: "IBV_WC_RETRY_EXC_ERR"}})
			}
			return fabric.RecvWR{}, false
		}
		p.mu.Lock()
		if len(p.rq) > 0 {
			rwr := p.rq[0]
			p.rq = p.rq[1:]
			p.mu.Unlock()
			return rwr, true
		}
		p.mu.Unlock()
		if try == 0 {
			q.ep.n.rnr.Add(1)
		}
		time.Sleep(20 * time.Microsecond)
	}
	return fabric.RecvWR{}, false
}

// deliverToReceive lands a SEND or a WRITE with immediate, consuming a receive WR of the peer.
func (q *memQP) deliverToReceive(wr fabric.SendWR) {
	p := q.peer
	rwr, ok := q.takeReceive(wr)
	if !ok || q.ep.closed.Load() || p.ep.closed.Load() {
		return
	}
	fail := func(local, remote string) {
		p.ep.complete(fabric.Completion{ID: rwr.ID, QP: p.idx, Recv: true, Err: &fabric.WCError{QP: p.idx, Status: remote, Recv: true}})
		q.ep.complete(fabric.Completion{ID: wr.ID, QP: q.idx, Err: &fabric.WCError{QP: q.idx, Status: local}})
	}
	switch wr.Op {
	case fabric.OpSendImm:
		if wr.Length > rwr.Length {
			fail("IBV_WC_REM_INV_REQ_ERR", "IBV_WC_LOC_LEN_ERR")
			return
		}
		copy(p.ep.mem.block(rwr.Block)[rwr.Offset:rwr.Offset+rwr.Length], q.ep.buf[wr.Offset:wr.Offset+wr.Length])
	case fabric.OpWriteImm:
		if err := q.writeRemote(wr); err != nil {
			fail("IBV_WC_REM_ACCESS_ERR", "IBV_WC_REM_ACCESS_ERR")
			return
		}
	}
	p.ep.complete(fabric.Completion{ID: rwr.ID, QP: p.idx, Recv: true, Bytes: uint32(wr.Length), Imm: wr.Imm})
	if wr.Signaled {
		q.ep.complete(fabric.Completion{ID: wr.ID, QP: q.idx})
	}
}

// Receiver is a fabric.ReceiverFabric whose ring is blocks, exposed to
// RDMA writes through a WholeRing or PerBlock region table (mode).
type Receiver struct {
	n      *Net
	blocks [][]byte
	mode   wire.MRMode
}

// NewReceiver returns a receiver's fabric on n over the ring blocks.
func NewReceiver(n *Net, blocks [][]byte, mode wire.MRMode) *Receiver {
	return &Receiver{n: n, blocks: blocks, mode: mode}
}

const memWholeBase, memBlockBase = 0x10000000, 0x40000000

func (f *Receiver) Open(_ context.Context, cfg fabric.EndpointConfig) (fabric.Endpoint, error) {
	return f.n.open(cfg, f, nil), nil
}

func (f *Receiver) blockStride() uint64 { return uint64(len(f.blocks[0])) + 4096 }

func (f *Receiver) Registration() (wire.MRMode, []wire.Region, fabric.Registered) {
	bs := uint64(len(f.blocks[0]))
	if f.mode == wire.MRWholeRing {
		return wire.MRWholeRing, []wire.Region{{Addr: memWholeBase, Len: bs * uint64(len(f.blocks)), RKey: 7}},
			fabric.Registered{Mode: fabric.MRWholeRing, Regions: 1, Bytes: bs * uint64(len(f.blocks)), Reason: "in-memory test fabric"}
	}
	regs := make([]wire.Region, len(f.blocks))
	for i := range regs {
		regs[i] = wire.Region{Addr: memBlockBase + uint64(i)*f.blockStride(), Len: bs, RKey: uint64(100 + i)}
	}
	return wire.MRPerBlock, regs, fabric.Registered{Mode: fabric.MRPerBlock, Regions: len(regs), Bytes: bs * uint64(len(regs)), Reason: "in-memory test fabric"}
}

// Fabric is the verbs transport: the in-memory fabric stands in for it.
func (f *Receiver) Fabric() wire.Fabric { return wire.Fabric{Transport: wire.TransportVerbs} }

func (f *Receiver) Close() error { return nil }

func (f *Receiver) block(i int) []byte { return f.blocks[i] }

func (f *Receiver) resolve(addr uint64, rkey uint64, n uint64) ([][]byte, error) {
	bs := uint64(len(f.blocks[0]))
	if f.mode == wire.MRWholeRing {
		if rkey != 7 || addr < memWholeBase || addr+n > memWholeBase+bs*uint64(len(f.blocks)) {
			return nil, errors.New("outside the ring")
		}
		var out [][]byte
		off := addr - memWholeBase
		for n > 0 {
			b, o := off/bs, off%bs
			k := min(n, bs-o)
			out = append(out, f.blocks[b][o:o+k])
			off, n = off+k, n-k
		}
		return out, nil
	}
	if addr < memBlockBase {
		return nil, errors.New("below the table")
	}
	i, o := (addr-memBlockBase)/f.blockStride(), (addr-memBlockBase)%f.blockStride()
	if i >= uint64(len(f.blocks)) || rkey != 100+i || o+n > bs {
		return nil, errors.New("outside block")
	}
	return [][]byte{f.blocks[i][o : o+n]}, nil
}

// Sender is a fabric.SenderFabric with a plain Go buffer.
type Sender struct {
	n   *Net
	buf []byte
}

// NewSender returns a sender's fabric on n with buf as its send buffer.
func NewSender(n *Net, buf []byte) *Sender { return &Sender{n: n, buf: buf} }

func (f *Sender) Open(_ context.Context, cfg fabric.EndpointConfig) (fabric.Endpoint, error) {
	return f.n.open(cfg, nil, f.buf), nil
}
func (f *Sender) Buffer() []byte { return f.buf }
func (f *Sender) Close() error   { return nil }

// Fabric is the verbs transport: the in-memory fabric stands in for it.
func (f *Sender) Fabric() wire.Fabric { return wire.Fabric{Transport: wire.TransportVerbs} }
