package verbsfabric

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/rdma/verbs"
)

// device is an opened RDMA device with a protection domain.
type device struct {
	cfg  fabric.DeviceConfig
	ctx  *verbs.Context
	pd   *verbs.PD
	port verbs.PortAttr
	gid  net.IP
}

func openDevice(cfg fabric.DeviceConfig) (d *device, err error) {
	if cfg.Port == 0 {
		cfg.Port = 1
	}
	c, err := verbs.Open(cfg.Device)
	if err != nil {
		return nil, fmt.Errorf("open RDMA device %q: %w", cfg.Device, err)
	}
	d = &device{cfg: cfg, ctx: c}
	defer func() {
		if err != nil {
			_ = d.close()
		}
	}()
	if d.port, err = c.QueryPort(cfg.Port); err != nil {
		return nil, err
	}
	if d.port.State != verbs.PortActive {
		return nil, fmt.Errorf("RDMA device %s port %d is %v, not ACTIVE", cfg.Device, cfg.Port, d.port.State)
	}
	if cfg.GIDIndex < 0 || cfg.GIDIndex >= d.port.GIDTableLen {
		return nil, fmt.Errorf("GID index %d is outside the GID table of %s port %d (%d entries)", cfg.GIDIndex, cfg.Device, cfg.Port, d.port.GIDTableLen)
	}
	if d.gid, err = c.QueryGID(cfg.Port, cfg.GIDIndex); err != nil {
		return nil, fmt.Errorf("GID index %d of %s port %d: %w", cfg.GIDIndex, cfg.Device, cfg.Port, err)
	}
	if d.gid.IsUnspecified() {
		return nil, fmt.Errorf("GID index %d of %s port %d is empty (no address behind it)", cfg.GIDIndex, cfg.Device, cfg.Port)
	}
	if d.pd, err = c.AllocPD(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *device) close() error {
	var errs []error
	if d.pd != nil {
		errs = append(errs, d.pd.Close())
	}
	if d.ctx != nil {
		errs = append(errs, d.ctx.Close())
	}
	return errors.Join(errs...)
}

// Receiver is a fabric.ReceiverFabric over libibverbs with the ring registered.
type Receiver struct {
	dev *device
	reg *Registration
}

// NewReceiver opens the device and registers the ring's data blocks in
// mode (Auto picks WholeRing when the ring is attached contiguously).
// log receives the registration's one-line summary.
func NewReceiver(cfg fabric.DeviceConfig, ring *dada.Ring, mode MRMode, log func(string)) (*Receiver, error) {
	d, err := openDevice(cfg)
	if err != nil {
		return nil, err
	}
	reg, err := Register(d.pd, ring, mode, RegisterOptions{Access: verbs.AccessLocalWrite | verbs.AccessRemoteWrite, Log: log, Name: "key=" + ring.Key().String()})
	if err != nil {
		_ = d.close()
		return nil, err
	}
	return &Receiver{dev: d, reg: reg}, nil
}

// GID returns the GID in use.
func (v *Receiver) GID() net.IP { return v.dev.gid }

// Open implements fabric.ReceiverFabric.
func (v *Receiver) Open(_ context.Context, cfg fabric.EndpointConfig) (fabric.Endpoint, error) {
	return newVerbsEndpoint(v.dev, cfg, true, verbs.AccessLocalWrite|verbs.AccessRemoteWrite, v.reg.Block, nil)
}

// Registration implements fabric.ReceiverFabric.
func (v *Receiver) Registration() (wire.MRMode, []wire.Region, fabric.Registered) {
	mode := wire.MRPerBlock
	if v.reg.Mode() == WholeRing {
		mode = wire.MRWholeRing
	}
	var regions []wire.Region
	for _, r := range v.reg.RegionTable() {
		regions = append(regions, wire.Region{Addr: r.Addr, Len: r.Len, RKey: uint64(r.RKey)})
	}
	return mode, regions, fabric.Registered{Mode: v.reg.Mode(), Regions: v.reg.Regions(), Bytes: v.reg.Bytes(), Reason: v.reg.Reason()}
}

// Fabric implements fabric.ReceiverFabric: the verbs transport.
func (v *Receiver) Fabric() wire.Fabric { return wire.Fabric{Transport: wire.TransportVerbs} }

// Close deregisters the ring and closes the device; idempotent.
func (v *Receiver) Close() error {
	if v.dev == nil {
		return nil
	}
	err := errors.Join(v.reg.Close(), v.dev.close())
	v.dev = nil
	return err
}

// Sender is a fabric.SenderFabric over libibverbs with a registered send buffer.
type Sender struct {
	dev *device
	buf []byte
	mr  *verbs.MR
}

// NewSender opens the device and registers a send buffer of n bytes.
func NewSender(cfg fabric.DeviceConfig, n uint64) (*Sender, error) {
	d, err := openDevice(cfg)
	if err != nil {
		return nil, err
	}
	buf, err := verbs.Mmap(int(n))
	if err != nil {
		_ = d.close()
		return nil, err
	}
	mr, err := d.pd.RegisterMR(buf, verbs.AccessLocalWrite)
	if err != nil {
		_ = verbs.Munmap(buf)
		_ = d.close()
		return nil, fmt.Errorf("register the %d-byte send buffer: %w", n, err)
	}
	return &Sender{dev: d, buf: buf, mr: mr}, nil
}

// Open implements SenderFabric.
func (v *Sender) Open(_ context.Context, cfg fabric.EndpointConfig) (fabric.Endpoint, error) {
	return newVerbsEndpoint(v.dev, cfg, false, verbs.AccessLocalWrite, nil, v.mr)
}

// Buffer implements SenderFabric.
func (v *Sender) Buffer() []byte { return v.buf }

// Fabric implements SenderFabric: the verbs transport.
func (v *Sender) Fabric() wire.Fabric { return wire.Fabric{Transport: wire.TransportVerbs} }

// Close implements SenderFabric; idempotent.
func (v *Sender) Close() error {
	if v.dev == nil {
		return nil
	}
	err := errors.Join(v.mr.Close(), verbs.Munmap(v.buf), v.dev.close())
	v.dev = nil
	return err
}

// verbsEndpoint is N RC queue pairs on one completion queue (or one each).
type verbsEndpoint struct {
	dev    *device
	recv   bool // receiver side: every completion is a receive
	cqs    []*verbs.CQ
	qps    []*verbs.QP
	psn    []uint32
	byQPN  map[uint32]int
	block  func(int) BlockMR
	sendMR *verbs.MR
	wcs    []verbs.WorkCompletion
	rwrs   []verbs.RecvWR
	swrs   [][]verbs.SendWR // per queue pair: PostSend runs on one thread per queue pair
	closed bool
	nextCQ int

	ackTimeout uint8

	events   chan struct{} // completion events, once Events started the waiter
	evCancel context.CancelFunc
	evDone   chan struct{}
}

// Arm requests a completion event for the next completion on the (single)
// completion queue.
func (ep *verbsEndpoint) Arm() error {
	if len(ep.cqs) != 1 {
		return errors.New("arm: one completion queue per queue pair")
	}
	return ep.cqs[0].Arm()
}

// Events delivers a value after each completion event requested by Arm; a
// goroutine waits on the completion channel until Close.
func (ep *verbsEndpoint) Events() <-chan struct{} {
	if ep.events == nil {
		ctx, cancel := context.WithCancel(context.Background())
		ep.events, ep.evCancel, ep.evDone = make(chan struct{}, 1), cancel, make(chan struct{})
		cq := ep.cqs[0]
		go func() {
			defer close(ep.evDone)
			_ = cq.EachEvent(ctx, func() {
				select {
				case ep.events <- struct{}{}:
				default: // one pending wake-up is enough
				}
			})
		}()
	}
	return ep.events
}

func newVerbsEndpoint(d *device, cfg fabric.EndpointConfig, recv bool, access verbs.Access, block func(int) BlockMR, sendMR *verbs.MR) (ep *verbsEndpoint, err error) {
	ep = &verbsEndpoint{dev: d, recv: recv, byQPN: map[uint32]int{}, block: block, sendMR: sendMR, wcs: make([]verbs.WorkCompletion, 64),
		ackTimeout: cfg.AckTimeout}
	if ep.ackTimeout == 0 {
		ep.ackTimeout = fabric.DefaultAckTimeout
	}
	defer func() {
		if err != nil {
			_ = ep.Close()
		}
	}()
	per := cfg.SendDepth + cfg.RecvDepth
	ncq := 1
	if cfg.CQPerQP {
		ncq = cfg.QPs
	}
	for i := 0; i < ncq; i++ {
		entries := per
		if !cfg.CQPerQP {
			entries = per * cfg.QPs
		}
		// With a single CQ both sides can sleep on its completion channel: a
		// sender while every send slot is in flight (PollWait), a receiver while
		// nothing arrives (Arm, Events).
		notify := ncq == 1
		cq, err := d.ctx.CreateCQ(verbs.CQConfig{Entries: entries, Notify: notify})
		if err != nil {
			return nil, fmt.Errorf("create completion queue %d: %w", i, err)
		}
		ep.cqs = append(ep.cqs, cq)
	}
	for i := 0; i < cfg.QPs; i++ {
		cq := ep.cqs[0]
		if cfg.CQPerQP {
			cq = ep.cqs[i]
		}
		qp, err := d.pd.CreateQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: cfg.SendDepth, MaxRecvWR: cfg.RecvDepth})
		if err != nil {
			return nil, fmt.Errorf("create queue pair %d of %d: %w", i, cfg.QPs, err)
		}
		ep.qps = append(ep.qps, qp)
		ep.swrs = append(ep.swrs, nil)
		if c := qp.Caps(); c.MaxRecvWR < cfg.RecvDepth || c.MaxSendWR < cfg.SendDepth {
			return nil, fmt.Errorf("queue pair %d: device allows %d send / %d receive WRs, %d / %d needed", i, c.MaxSendWR, c.MaxRecvWR, cfg.SendDepth, cfg.RecvDepth)
		}
		if err := qp.ToInit(d.cfg.Port, access); err != nil {
			return nil, fmt.Errorf("queue pair %d: %w", i, err)
		}
		var b [4]byte
		_, _ = rand.Read(b[:])
		ep.psn = append(ep.psn, binary.LittleEndian.Uint32(b[:])&0xffffff)
		ep.byQPN[qp.QPN()] = i
	}
	return ep, nil
}

func (ep *verbsEndpoint) Local() []wire.QPInfo {
	out := make([]wire.QPInfo, len(ep.qps))
	for i, qp := range ep.qps {
		out[i] = wire.QPInfo{QPN: qp.QPN(), PSN: ep.psn[i], LID: ep.dev.port.LID, MTU: uint32(ep.dev.port.ActiveMTU.Bytes())}
		copy(out[i].GID[:], ep.dev.gid.To16())
	}
	return out
}

func mtuOf(bytes uint32) verbs.MTU {
	for m := verbs.MTU4096; m >= verbs.MTU256; m-- {
		if uint32(m.Bytes()) <= bytes {
			return m
		}
	}
	return verbs.MTU256
}

func (ep *verbsEndpoint) Connect(remote []wire.QPInfo) error {
	if len(remote) != len(ep.qps) {
		return fmt.Errorf("%d remote queue pairs for %d local ones", len(remote), len(ep.qps))
	}
	for i, qp := range ep.qps {
		r := remote[i]
		rtr := verbs.DefaultRTR()
		rtr.Port = ep.dev.cfg.Port
		rtr.PathMTU = min(ep.dev.port.ActiveMTU, mtuOf(r.MTU))
		rtr.RemoteQPN, rtr.RemotePSN = r.QPN, r.PSN
		rtr.RemoteGID = net.IP(append([]byte(nil), r.GID[:]...))
		rtr.SGIDIndex = ep.dev.cfg.GIDIndex
		if err := qp.ToRTR(rtr); err != nil {
			return fmt.Errorf("queue pair %d to RTR (GID index %d, remote GID %s): %w", i, rtr.SGIDIndex, rtr.RemoteGID, err)
		}
		rts := verbs.DefaultRTS()
		rts.PSN = ep.psn[i]
		rts.Timeout = ep.ackTimeout
		if err := qp.ToRTS(rts); err != nil {
			return fmt.Errorf("queue pair %d to RTS: %w", i, err)
		}
	}
	return nil
}

func (ep *verbsEndpoint) PostRecv(q int, wrs []fabric.RecvWR) error {
	ep.rwrs = ep.rwrs[:0]
	for _, w := range wrs {
		v := verbs.RecvWR{ID: w.ID}
		if w.Length > 0 {
			b := ep.block(w.Block)
			v.Addr, v.Length, v.LKey = b.Addr+w.Offset, uint32(w.Length), b.LKey
		}
		ep.rwrs = append(ep.rwrs, v)
	}
	return ep.qps[q].PostRecv(ep.rwrs)
}

func (ep *verbsEndpoint) PostSend(q int, wrs []fabric.SendWR) error {
	swrs, err := ep.sendWRs(q, wrs)
	if err != nil {
		return err
	}
	return ep.qps[q].PostSend(swrs)
}

// sendWRs translates queue pair q's work requests for the device, in q's
// scratch (the sender's loop and one posting thread per queue pair use it).
func (ep *verbsEndpoint) sendWRs(q int, wrs []fabric.SendWR) ([]verbs.SendWR, error) {
	swrs := ep.swrs[q][:0]
	base := uint64(ep.sendMR.Addr())
	for _, w := range wrs {
		v := verbs.SendWR{ID: w.ID, Addr: base + w.Offset, Length: uint32(w.Length), LKey: ep.sendMR.LKey(), Imm: w.Imm, Signaled: w.Signaled}
		if w.RKey > math.MaxUint32 {
			return nil, fmt.Errorf("post send: key %#x exceeds a 32-bit verbs rkey", w.RKey)
		}
		switch w.Op {
		case fabric.OpSendImm:
			v.Opcode = verbs.OpSendWithImm
		case fabric.OpWriteImm:
			v.Opcode, v.RemoteAddr, v.RKey = verbs.OpRDMAWriteWithImm, w.RemoteAddr, uint32(w.RKey)
		case fabric.OpWrite:
			v.Opcode, v.RemoteAddr, v.RKey = verbs.OpRDMAWrite, w.RemoteAddr, uint32(w.RKey)
		default:
			return nil, fmt.Errorf("post send: unknown op %d", w.Op)
		}
		swrs = append(swrs, v)
	}
	ep.swrs[q] = swrs
	return swrs, nil
}

// StartPostThreads gives the sender posting threads outside the Go
// scheduler (verbs.PostThread), one pinned to each CPU of cpus: a goroutine
// that posts in a loop is in cgo calls nearly all the time, and the Go
// runtime's sysmon, which takes such a goroutine's P away every 10 ms, then
// wakes every 20 µs for a while: over a thousand times a second in the
// Soft-RoCE VM, on the CPUs that carry the data.
func (ep *verbsEndpoint) StartPostThreads(cpus []int, depth int, log *slog.Logger) (fabric.PostLanes, error) {
	p := &postThreads{ep: ep, done: make(chan struct{})}
	p.failedAt, p.fail = context.WithCancel(context.Background())
	for i, cpu := range cpus {
		t, err := verbs.StartPostThread(cpu, depth)
		if err != nil {
			p.Stop()
			return nil, fmt.Errorf("posting thread %d: %w", i, err)
		}
		p.ts = append(p.ts, t)
		log.Info("Pinned the posting thread", "thread", i, "cpu", cpu)
		go func() {
			select {
			case <-t.Failed():
				p.fail()
			case <-p.done:
			}
		}()
	}
	return p, nil
}

// postThreads are the verbs endpoint's fabric.PostLanes.
type postThreads struct {
	ep       *verbsEndpoint
	ts       []*verbs.PostThread
	failedAt context.Context // done at the first failure
	fail     context.CancelFunc
	done     chan struct{} // closed by stop
	stopped  bool
	failures []fabric.PostFailure
}

func (p *postThreads) Post(q int, wrs []fabric.SendWR) error {
	swrs, err := p.ep.sendWRs(q, wrs)
	if err != nil {
		return err
	}
	return p.ts[q%len(p.ts)].Post(p.ep.qps[q], q, swrs)
}

func (p *postThreads) Failed() context.Context { return p.failedAt }
func (p *postThreads) Threads() int            { return max(1, len(p.ts)) }

func (p *postThreads) Stop() {
	if p.stopped {
		return
	}
	p.stopped = true
	for _, t := range p.ts {
		for _, f := range t.Close() {
			p.failures = append(p.failures, fabric.PostFailure{QP: f.Tag, N: f.N, Err: fabric.PostError(f.Tag, []fabric.SendWR{{Imm: f.First.Imm}}, f.Err)})
		}
	}
	close(p.done)
	if len(p.failures) > 0 {
		p.fail() // a failure the watchers had not passed on yet
	}
}

func (p *postThreads) TakeFailures() []fabric.PostFailure {
	f := p.failures
	p.failures = nil
	return f
}

func (ep *verbsEndpoint) Poll(wcs []fabric.Completion) (int, error) {
	n := 0
	for range ep.cqs {
		if n == len(wcs) {
			break
		}
		cq := ep.cqs[ep.nextCQ]
		ep.nextCQ = (ep.nextCQ + 1) % len(ep.cqs)
		k, err := cq.Poll(ep.wcs[:min(len(ep.wcs), len(wcs)-n)])
		if err != nil {
			return n, err
		}
		for _, wc := range ep.wcs[:k] {
			q := ep.byQPN[wc.QPN]
			c := fabric.Completion{ID: wc.ID, QP: q, Bytes: wc.ByteLen, Imm: wc.Imm}
			if err := wc.Err(); err != nil {
				c.Recv = ep.recv
				c.Err = &fabric.WCError{QP: q, Status: "IBV_WC_" + wc.Status.String(), Recv: ep.recv}
			} else {
				c.Recv = wc.Opcode&0x80 != 0
			}
			wcs[n] = c
			n++
		}
	}
	return n, nil
}

// PollWait is Poll that sleeps until a completion arrives (sender side, one
// CQ); it reports false when the endpoint cannot wait.
func (ep *verbsEndpoint) PollWait(ctx context.Context, wcs []fabric.Completion) (int, bool, error) {
	if ep.recv || len(ep.cqs) != 1 {
		return 0, false, nil
	}
	k, err := ep.cqs[0].PollWait(ctx, ep.wcs[:min(len(ep.wcs), len(wcs))])
	if err != nil {
		return 0, true, err
	}
	for i, wc := range ep.wcs[:k] {
		q := ep.byQPN[wc.QPN]
		c := fabric.Completion{ID: wc.ID, QP: q, Bytes: wc.ByteLen, Imm: wc.Imm, Recv: wc.Opcode&0x80 != 0}
		if err := wc.Err(); err != nil {
			c.Recv = false
			c.Err = &fabric.WCError{QP: q, Status: "IBV_WC_" + wc.Status.String()}
		}
		wcs[i] = c
	}
	return k, true, nil
}

// Close destroys the queue pairs, then the completion queues; idempotent.
func (ep *verbsEndpoint) Close() error {
	if ep.closed {
		return nil
	}
	ep.closed = true
	if ep.evCancel != nil {
		ep.evCancel()
		<-ep.evDone // the waiter touches the completion channel: stop it first
	}
	var errs []error
	for _, qp := range ep.qps {
		errs = append(errs, qp.Close())
	}
	for _, cq := range ep.cqs {
		errs = append(errs, cq.Close())
	}
	return errors.Join(errs...)
}
