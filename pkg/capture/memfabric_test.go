package capture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// memNet is an in-memory RC fabric for host tests: each queue pair delivers
// its work requests in order on its own goroutine (so queue pairs interleave
// freely, as on a wire), SENDs consume the peer's receive WRs in order and
// wait while none is posted (RNR back-pressure), RDMA writes land through the
// receiver's region table, and errors complete with verbs status names.
type memNet struct {
	mu   sync.Mutex
	qps  map[uint32]*memQP
	next uint32
	seed atomic.Uint64
	// hook, when set, runs before each send WR is delivered, on the goroutine
	// of the sending queue pair (index qp): blocking in it stalls that queue
	// pair alone, as a retransmission timeout does on a real link.
	hook func(qp int, wr SendWR)
	// blackhole makes send WRs to a closed peer vanish without a completion,
	// as on rxe with retry count 7 (retry forever); otherwise they fail with
	// IBV_WC_RETRY_EXC_ERR.
	blackhole bool
	// arms counts Arm calls: how often a receive loop got ready to sleep.
	arms atomic.Int64
	// posted, when set, learns the size of each PostSend, on the poster's
	// goroutine.
	posted func(qp, n int)
	// postErr, when set, is asked before each PostSend (on the poster's
	// goroutine) and fails it, posting nothing, when it returns an error.
	postErr func(qp, n int) error
}

func newMemNet() *memNet { return &memNet{qps: map[uint32]*memQP{}, next: 100} }

type memEP struct {
	n      *memNet
	qps    []*memQP
	cq     chan Completion
	closed atomic.Bool
	wg     sync.WaitGroup
	mem    memoryTarget // receiver side: ring blocks
	buf    []byte       // sender side: send buffer
	once   sync.Once
	armed  atomic.Bool
	events chan struct{}
}

// Arm and Events make memEP a notifier, as a verbs endpoint with one CQ is.
func (e *memEP) Arm() error { e.n.arms.Add(1); e.armed.Store(true); return nil }

func (e *memEP) Events() <-chan struct{} { return e.events }

type memoryTarget interface {
	block(i int) []byte
	resolve(addr uint64, rkey uint32, n uint64) ([][]byte, error)
}

type memQP struct {
	ep   *memEP
	idx  int
	qpn  uint32
	peer *memQP
	mu   sync.Mutex
	rq   []RecvWR
	sq   chan SendWR
}

func (n *memNet) open(cfg EndpointConfig, mem memoryTarget, buf []byte) *memEP {
	ep := &memEP{n: n, cq: make(chan Completion, cfg.QPs*(cfg.SendDepth+cfg.RecvDepth)+16), mem: mem, buf: buf, events: make(chan struct{}, 1)}
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := range cfg.QPs {
		q := &memQP{ep: ep, idx: i, qpn: n.next, sq: make(chan SendWR, cfg.SendDepth)}
		n.next++
		n.qps[q.qpn] = q
		ep.qps = append(ep.qps, q)
	}
	return ep
}

func (e *memEP) Local() []wire.QPInfo {
	out := make([]wire.QPInfo, len(e.qps))
	for i, q := range e.qps {
		out[i] = wire.QPInfo{QPN: q.qpn, PSN: q.qpn & 0xffffff, MTU: 4096}
	}
	return out
}

func (e *memEP) Connect(remote []wire.QPInfo) error {
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

func (e *memEP) PostRecv(qp int, wrs []RecvWR) error {
	if e.closed.Load() {
		return errors.New("post recv: endpoint closed")
	}
	q := e.qps[qp]
	q.mu.Lock()
	q.rq = append(q.rq, wrs...)
	q.mu.Unlock()
	return nil
}

func (e *memEP) PostSend(qp int, wrs []SendWR) error {
	if e.closed.Load() {
		return errors.New("post send: endpoint closed")
	}
	if e.n.postErr != nil {
		if err := e.n.postErr(qp, len(wrs)); err != nil {
			return err
		}
	}
	if e.n.posted != nil {
		e.n.posted(qp, len(wrs))
	}
	for _, wr := range wrs {
		e.qps[qp].sq <- wr
	}
	return nil
}

func (e *memEP) Poll(wcs []Completion) (int, error) {
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

func (e *memEP) Close() error {
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

func (e *memEP) complete(wc Completion) {
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
func (q *memQP) writeRemote(wr SendWR) error {
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
		if h := q.ep.n.hook; h != nil {
			h(q.idx, wr)
		}
		if rng.IntN(4) == 0 {
			time.Sleep(time.Duration(rng.IntN(50)) * time.Microsecond) // shuffle queue pairs
		}
		p := q.peer
		if wr.Op == OpWrite { // lands without a receive WR or a completion at the peer
			if p.ep.closed.Load() && !q.ep.closed.Load() && !q.ep.n.blackhole {
				q.ep.complete(Completion{ID: wr.ID, QP: q.idx, Err: &WCError{QP: q.idx, Status: "IBV_WC_RETRY_EXC_ERR"}})
			}
			if q.ep.closed.Load() || p.ep.closed.Load() {
				continue
			}
			if err := q.writeRemote(wr); err != nil {
				q.ep.complete(Completion{ID: wr.ID, QP: q.idx, Err: &WCError{QP: q.idx, Status: "IBV_WC_REM_ACCESS_ERR"}})
				continue
			}
			if wr.Signaled {
				q.ep.complete(Completion{ID: wr.ID, QP: q.idx})
			}
			continue
		}
		var rwr RecvWR
		for !q.ep.closed.Load() { // receiver-not-ready: retry until a receive WR is posted
			if p.ep.closed.Load() {
				if !q.ep.n.blackhole {
					q.ep.complete(Completion{ID: wr.ID, QP: q.idx, Err: &WCError{QP: q.idx, Status: "IBV_WC_RETRY_EXC_ERR"}})
				}
				break
			}
			p.mu.Lock()
			if len(p.rq) > 0 {
				rwr = p.rq[0]
				p.rq = p.rq[1:]
				p.mu.Unlock()
				break
			}
			p.mu.Unlock()
			time.Sleep(20 * time.Microsecond)
		}
		if q.ep.closed.Load() || p.ep.closed.Load() {
			continue
		}
		fail := func(local, remote string) {
			p.ep.complete(Completion{ID: rwr.ID, QP: p.idx, Recv: true, Err: &WCError{QP: p.idx, Status: remote, Recv: true}})
			q.ep.complete(Completion{ID: wr.ID, QP: q.idx, Err: &WCError{QP: q.idx, Status: local}})
		}
		switch wr.Op {
		case OpSendImm:
			if wr.Length > rwr.Length {
				fail("IBV_WC_REM_INV_REQ_ERR", "IBV_WC_LOC_LEN_ERR")
				continue
			}
			copy(p.ep.mem.block(rwr.Block)[rwr.Offset:rwr.Offset+rwr.Length], q.ep.buf[wr.Offset:wr.Offset+wr.Length])
		case OpWriteImm:
			if err := q.writeRemote(wr); err != nil {
				fail("IBV_WC_REM_ACCESS_ERR", "IBV_WC_REM_ACCESS_ERR")
				continue
			}
		}
		p.ep.complete(Completion{ID: rwr.ID, QP: p.idx, Recv: true, Bytes: uint32(wr.Length), Imm: wr.Imm})
		if wr.Signaled {
			q.ep.complete(Completion{ID: wr.ID, QP: q.idx})
		}
	}
}

// memRecvFabric exposes ring blocks through a WholeRing or PerBlock table.
type memRecvFabric struct {
	n      *memNet
	blocks [][]byte
	mode   wire.MRMode
}

const memWholeBase, memBlockBase = 0x10000000, 0x40000000

func (f *memRecvFabric) Open(_ context.Context, cfg EndpointConfig) (Endpoint, error) {
	return f.n.open(cfg, f, nil), nil
}

func (f *memRecvFabric) blockStride() uint64 { return uint64(len(f.blocks[0])) + 4096 }

func (f *memRecvFabric) Registration() (wire.MRMode, []wire.Region, MRInfo) {
	bs := uint64(len(f.blocks[0]))
	if f.mode == wire.MRWholeRing {
		return wire.MRWholeRing, []wire.Region{{Addr: memWholeBase, Len: bs * uint64(len(f.blocks)), RKey: 7}},
			MRInfo{Mode: "WholeRing", Regions: 1, Bytes: bs * uint64(len(f.blocks)), Reason: "in-memory test fabric"}
	}
	regs := make([]wire.Region, len(f.blocks))
	for i := range regs {
		regs[i] = wire.Region{Addr: memBlockBase + uint64(i)*f.blockStride(), Len: bs, RKey: uint32(100 + i)}
	}
	return wire.MRPerBlock, regs, MRInfo{Mode: "PerBlock", Regions: len(regs), Bytes: bs * uint64(len(regs)), Reason: "in-memory test fabric"}
}

func (f *memRecvFabric) Close() error { return nil }

func (f *memRecvFabric) block(i int) []byte { return f.blocks[i] }

func (f *memRecvFabric) resolve(addr uint64, rkey uint32, n uint64) ([][]byte, error) {
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
	if i >= uint64(len(f.blocks)) || rkey != uint32(100+i) || o+n > bs {
		return nil, errors.New("outside block")
	}
	return [][]byte{f.blocks[i][o : o+n]}, nil
}

// memSendFabric is a sender with a plain Go buffer.
type memSendFabric struct {
	n   *memNet
	buf []byte
}

func (f *memSendFabric) Open(_ context.Context, cfg EndpointConfig) (Endpoint, error) {
	return f.n.open(cfg, nil, f.buf), nil
}
func (f *memSendFabric) Buffer() []byte { return f.buf }
func (f *memSendFabric) Close() error   { return nil }
