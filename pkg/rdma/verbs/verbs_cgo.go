//go:build linux && cgo

package verbs

/*
#cgo LDFLAGS: -libverbs
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include "rc.h"

// ibv_reg_mr, ibv_query_port, ibv_query_gid_table, ibv_post_send/recv, ibv_poll_cq and
// ibv_req_notify_cq are macros or static inlines in rdma-core: cgo calls these wrappers.

static struct ibv_device *rc_dev_at(struct ibv_device **l, int i) { return l[i]; }

static struct ibv_mr *rc_reg_mr(struct ibv_pd *pd, uintptr_t addr, size_t len, int access) {
	return ibv_reg_mr(pd, (void *)addr, len, access);
}

static int rc_query_port(struct ibv_context *ctx, int port, struct ibv_port_attr *a) {
	return ibv_query_port(ctx, (uint8_t)port, a);
}

static ssize_t rc_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *e, size_t n) {
	return ibv_query_gid_table(ctx, e, n, 0);
}

static int rc_query_gid(struct ibv_context *ctx, int port, int index, uint8_t *out) {
	union ibv_gid g;
	int rc = ibv_query_gid(ctx, (uint8_t)port, index, &g);
	if (rc == 0) memcpy(out, g.raw, 16);
	return rc;
}

static int rc_set_nonblock(int fd) {
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0) return errno;
	return fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? errno : 0;
}

struct rc_rwr {
	uint64_t id, addr;
	uint32_t len, lkey;
};
struct rc_wc {
	uint64_t id;
	uint32_t byte_len, imm, qp_num, vendor_err;
	int32_t status, opcode, with_imm;
};

// Posts n send work requests as one chain. Returns 0 or an errno value; *bad is the index
// of the first request not posted.
static int rc_post_send(struct ibv_qp *qp, struct rc_swr *w, int n, struct ibv_send_wr *wr,
                        struct ibv_sge *sge, int *bad) {
	rc_build_send(w, n, wr, sge);
	struct ibv_send_wr *b = NULL;
	int rc = ibv_post_send(qp, wr, &b);
	*bad = b ? (int)(b - wr) : n;
	return rc;
}

static int rc_post_recv(struct ibv_qp *qp, struct rc_rwr *w, int n, struct ibv_recv_wr *wr,
                        struct ibv_sge *sge, int *bad) {
	for (int i = 0; i < n; i++) {
		memset(&wr[i], 0, sizeof(wr[i]));
		wr[i].wr_id = w[i].id;
		if (w[i].len > 0) {
			sge[i].addr = w[i].addr; sge[i].length = w[i].len; sge[i].lkey = w[i].lkey;
			wr[i].sg_list = &sge[i]; wr[i].num_sge = 1;
		}
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	struct ibv_recv_wr *b = NULL;
	int rc = ibv_post_recv(qp, wr, &b);
	*bad = b ? (int)(b - wr) : n;
	return rc;
}

// Polls up to n completions (n <= 64). Returns the count or a negative value on error.
static int rc_poll(struct ibv_cq *cq, struct rc_wc *out, int n) {
	struct ibv_wc wc[64];
	if (n > 64) n = 64;
	int got = ibv_poll_cq(cq, n, wc);
	for (int i = 0; i < got; i++) {
		out[i].id = wc[i].wr_id;
		out[i].status = wc[i].status;
		out[i].opcode = wc[i].opcode;
		out[i].byte_len = wc[i].byte_len;
		out[i].with_imm = (wc[i].wc_flags & IBV_WC_WITH_IMM) != 0;
		out[i].imm = out[i].with_imm ? ntohl(wc[i].imm_data) : 0;
		out[i].qp_num = wc[i].qp_num;
		out[i].vendor_err = wc[i].vendor_err;
	}
	return got;
}

static int rc_req_notify(struct ibv_cq *cq, int solicited) { return ibv_req_notify_cq(cq, solicited); }

// Consumes one pending event of a non-blocking channel: 1 = got one (acked), 0 = none,
// -errno on error.
static int rc_get_event(struct ibv_comp_channel *ch) {
	struct ibv_cq *cq; void *cqctx;
	if (ibv_get_cq_event(ch, &cq, &cqctx)) return errno == EAGAIN ? 0 : -errno;
	ibv_ack_cq_events(cq, 1);
	return 1;
}

static int rc_modify_init(struct ibv_qp *qp, int port, int access) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT; a.pkey_index = 0; a.port_num = (uint8_t)port;
	a.qp_access_flags = (unsigned int)access;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static int rc_modify_rtr(struct ibv_qp *qp, int mtu, uint32_t dqpn, uint32_t rq_psn, const uint8_t *dgid,
                         int sgid_index, int port, int hop_limit, int tclass, int max_dest_rd_atomic,
                         int min_rnr_timer) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)mtu;
	a.dest_qp_num = dqpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = (uint8_t)max_dest_rd_atomic;
	a.min_rnr_timer = (uint8_t)min_rnr_timer;
	a.ah_attr.is_global = 1;
	memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
	a.ah_attr.grh.sgid_index = (uint8_t)sgid_index;
	a.ah_attr.grh.hop_limit = (uint8_t)hop_limit;
	a.ah_attr.grh.traffic_class = (uint8_t)tclass;
	a.ah_attr.port_num = (uint8_t)port;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
	                     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

static int rc_modify_rts(struct ibv_qp *qp, uint32_t sq_psn, int timeout, int retry, int rnr_retry,
                         int max_rd_atomic) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS; a.sq_psn = sq_psn; a.timeout = (uint8_t)timeout;
	a.retry_cnt = (uint8_t)retry; a.rnr_retry = (uint8_t)rnr_retry;
	a.max_rd_atomic = (uint8_t)max_rd_atomic;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
	                     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int rc_modify_err(struct ibv_qp *qp) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

static int rc_qp_state(struct ibv_qp *qp, int *state) {
	struct ibv_qp_attr a; struct ibv_qp_init_attr ia;
	int rc = ibv_query_qp(qp, &a, IBV_QP_STATE, &ia);
	if (rc == 0) *state = a.qp_state;
	return rc;
}

static struct ibv_qp *rc_create_qp(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq,
                                   uint32_t *caps, int sig_all) {
	struct ibv_qp_init_attr ia;
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = scq; ia.recv_cq = rcq; ia.qp_type = IBV_QPT_RC; ia.sq_sig_all = sig_all;
	ia.cap.max_send_wr = caps[0]; ia.cap.max_recv_wr = caps[1];
	ia.cap.max_send_sge = caps[2]; ia.cap.max_recv_sge = caps[3]; ia.cap.max_inline_data = caps[4];
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);
	if (qp) {
		caps[0] = ia.cap.max_send_wr; caps[1] = ia.cap.max_recv_wr;
		caps[2] = ia.cap.max_send_sge; caps[3] = ia.cap.max_recv_sge; caps[4] = ia.cap.max_inline_data;
	}
	return qp;
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const pollChunk = 64 // completions per cgo call (rc_poll's stack array)

func errnoErr(rc C.int) error {
	if rc < 0 {
		rc = -rc
	}
	return syscall.Errno(rc)
}

// cErr returns the errno cgo captured, or EIO when libibverbs left errno at 0.
func cErr(err error) error {
	if err == nil {
		return syscall.EIO
	}
	return err
}

// DeviceNames lists the RDMA devices libibverbs sees (e.g. "rxe0", "mlx5_0").
func DeviceNames() ([]string, error) {
	var n C.int
	list, err := C.ibv_get_device_list(&n)
	if list == nil {
		return nil, fmt.Errorf("ibv_get_device_list: %w", cErr(err))
	}
	defer C.ibv_free_device_list(list)
	names := make([]string, 0, int(n))
	for i := 0; i < int(n); i++ {
		names = append(names, C.GoString(C.ibv_get_device_name(C.rc_dev_at(list, C.int(i)))))
	}
	return names, nil
}

// Context is an opened RDMA device (struct ibv_context) and the owner of everything
// created on it.
type Context struct {
	name string
	ctx  *C.struct_ibv_context
	attr DeviceAttr

	mu     sync.Mutex
	closed bool
	pds    map[*PD]struct{}
	cqs    map[*CQ]struct{}
}

// Open opens the RDMA device with the given name.
func Open(name string) (*Context, error) {
	var n C.int
	list, err := C.ibv_get_device_list(&n)
	if list == nil {
		return nil, fmt.Errorf("open RDMA device %q: ibv_get_device_list: %w", name, cErr(err))
	}
	defer C.ibv_free_device_list(list)
	var dev *C.struct_ibv_device
	var names []string
	for i := 0; i < int(n); i++ {
		d := C.rc_dev_at(list, C.int(i))
		dn := C.GoString(C.ibv_get_device_name(d))
		names = append(names, dn)
		if dn == name {
			dev = d
		}
	}
	if dev == nil {
		return nil, fmt.Errorf("open RDMA device %q: no such device (devices: %v)", name, names)
	}
	ctx, err := C.ibv_open_device(dev)
	if ctx == nil {
		return nil, fmt.Errorf("open RDMA device %q: ibv_open_device: %w", name, cErr(err))
	}
	c := &Context{name: name, ctx: ctx, pds: map[*PD]struct{}{}, cqs: map[*CQ]struct{}{}}
	live.contexts.Add(1)
	if c.attr, err = c.QueryDevice(); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// Name returns the device name.
func (c *Context) Name() string { return c.name }

// Attr returns the device attributes queried at Open.
func (c *Context) Attr() DeviceAttr { return c.attr }

// QueryDevice queries the device attributes (ibv_query_device).
func (c *Context) QueryDevice() (DeviceAttr, error) {
	if err := c.check(); err != nil {
		return DeviceAttr{}, err
	}
	var a C.struct_ibv_device_attr
	if rc := C.ibv_query_device(c.ctx, &a); rc != 0 {
		return DeviceAttr{}, fmt.Errorf("query device %s: %w", c.name, errnoErr(rc))
	}
	return DeviceAttr{
		FirmwareVersion: C.GoString(&a.fw_ver[0]),
		NodeGUID:        beToHost64(uint64(a.node_guid)),
		VendorID:        uint32(a.vendor_id),
		VendorPartID:    uint32(a.vendor_part_id),
		MaxMRSize:       uint64(a.max_mr_size),
		MaxQP:           int(a.max_qp),
		MaxQPWR:         int(a.max_qp_wr),
		MaxSGE:          int(a.max_sge),
		MaxCQ:           int(a.max_cq),
		MaxCQE:          int(a.max_cqe),
		MaxMR:           int(a.max_mr),
		MaxPD:           int(a.max_pd),
		MaxQPRdAtom:     int(a.max_qp_rd_atom),
		MaxQPInitRdAtom: int(a.max_qp_init_rd_atom),
		PhysPortCount:   int(a.phys_port_cnt),
	}, nil
}

func beToHost64(v uint64) uint64 {
	var b [8]byte
	*(*uint64)(unsafe.Pointer(&b[0])) = v
	var r uint64
	for _, x := range b {
		r = r<<8 | uint64(x)
	}
	return r
}

// QueryPort queries a port's attributes (ibv_query_port).
func (c *Context) QueryPort(port int) (PortAttr, error) {
	if err := c.check(); err != nil {
		return PortAttr{}, err
	}
	var a C.struct_ibv_port_attr
	if rc := C.rc_query_port(c.ctx, C.int(port), &a); rc != 0 {
		return PortAttr{}, fmt.Errorf("query port %s/%d: %w", c.name, port, errnoErr(rc))
	}
	ll := "Unspecified"
	switch a.link_layer {
	case C.IBV_LINK_LAYER_ETHERNET:
		ll = "Ethernet"
	case C.IBV_LINK_LAYER_INFINIBAND:
		ll = "InfiniBand"
	}
	return PortAttr{
		State: PortState(a.state), MaxMTU: MTU(a.max_mtu), ActiveMTU: MTU(a.active_mtu),
		GIDTableLen: int(a.gid_tbl_len), LinkLayer: ll, LID: uint16(a.lid), MaxMsgSize: uint32(a.max_msg_sz),
	}, nil
}

// QueryGID reads one GID table entry (ibv_query_gid); unused entries read as all zeros.
func (c *Context) QueryGID(port, index int) (net.IP, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	gid := make(net.IP, 16)
	if rc := C.rc_query_gid(c.ctx, C.int(port), C.int(index), (*C.uint8_t)(unsafe.Pointer(&gid[0]))); rc != 0 {
		return nil, fmt.Errorf("query GID %s/%d index %d: %w", c.name, port, index, errnoErr(rc))
	}
	return gid, nil
}

// GIDTable returns the valid GID entries of one port (ibv_query_gid_table), with their
// types and owning network devices.
func (c *Context) GIDTable(port int) ([]GIDEntry, error) { return c.gidTable(port, true) }

// gidTable is GIDTable; without netdevs it leaves Netdev empty and skips the netlink
// query that resolves each entry's ifindex.
func (c *Context) gidTable(port int, netdevs bool) ([]GIDEntry, error) {
	pa, err := c.QueryPort(port)
	if err != nil {
		return nil, err
	}
	total := pa.GIDTableLen * max(c.attr.PhysPortCount, 1)
	if total == 0 {
		return nil, nil
	}
	buf := C.malloc(C.size_t(total) * C.size_t(unsafe.Sizeof(C.struct_ibv_gid_entry{})))
	if buf == nil {
		return nil, fmt.Errorf("GID table of %s: out of memory", c.name)
	}
	defer C.free(buf)
	n, err := C.rc_query_gid_table(c.ctx, (*C.struct_ibv_gid_entry)(buf), C.size_t(total))
	if n < 0 {
		return nil, fmt.Errorf("query GID table of %s: %w", c.name, errnoErr(C.int(n)))
	}
	_ = err
	entries := unsafe.Slice((*C.struct_ibv_gid_entry)(buf), int(n))
	var out []GIDEntry
	for _, e := range entries {
		if int(e.port_num) != port {
			continue
		}
		g := GIDEntry{Index: int(e.gid_index), Port: port, GID: net.IP(C.GoBytes(unsafe.Pointer(&e.gid[0]), 16)),
			Type: GIDType(e.gid_type)}
		if netdevs && e.ndev_ifindex != 0 {
			if ifc, err := net.InterfaceByIndex(int(e.ndev_ifindex)); err == nil {
				g.Netdev = ifc.Name
			}
		}
		out = append(out, g)
	}
	return out, nil
}

func (c *Context) check() error {
	if c == nil || c.ctx == nil {
		return ErrClosed
	}
	return nil
}

// Close closes every object created on the device (QPs, CQs, MRs, PDs) and then the device.
// Idempotent.
func (c *Context) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	pds := slices.Collect(maps.Keys(c.pds))
	cqs := slices.Collect(maps.Keys(c.cqs))
	c.mu.Unlock()
	var errs []error
	for _, pd := range pds { // QPs and MRs first (PD.Close closes them)
		errs = append(errs, pd.closeChildren())
	}
	for _, cq := range cqs {
		errs = append(errs, cq.Close())
	}
	for _, pd := range pds {
		errs = append(errs, pd.Close())
	}
	if rc := C.ibv_close_device(c.ctx); rc != 0 {
		errs = append(errs, fmt.Errorf("close RDMA device %s: %w", c.name, errnoErr(rc)))
	}
	c.ctx = nil
	live.contexts.Add(-1)
	return errors.Join(errs...)
}

// PD is a protection domain (struct ibv_pd); it owns MRs and QPs.
type PD struct {
	c  *Context
	pd *C.struct_ibv_pd

	mu     sync.Mutex
	closed bool
	mrs    map[*MR]struct{}
	qps    map[*QP]struct{}
}

// AllocPD allocates a protection domain.
func (c *Context) AllocPD() (*PD, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	p, err := C.ibv_alloc_pd(c.ctx)
	if p == nil {
		return nil, fmt.Errorf("allocate protection domain on %s: %w", c.name, cErr(err))
	}
	pd := &PD{c: c, pd: p, mrs: map[*MR]struct{}{}, qps: map[*QP]struct{}{}}
	c.pds[pd] = struct{}{}
	live.pds.Add(1)
	return pd, nil
}

// Context returns the device the PD belongs to.
func (pd *PD) Context() *Context { return pd.c }

func (pd *PD) closeChildren() error {
	pd.mu.Lock()
	qps, mrs := slices.Collect(maps.Keys(pd.qps)), slices.Collect(maps.Keys(pd.mrs))
	pd.mu.Unlock()
	var errs []error
	for _, qp := range qps {
		errs = append(errs, qp.Close())
	}
	for _, mr := range mrs {
		errs = append(errs, mr.Close())
	}
	return errors.Join(errs...)
}

// Close closes the PD's QPs and MRs, then deallocates it. Idempotent.
func (pd *PD) Close() error {
	err := pd.closeChildren()
	pd.mu.Lock()
	defer pd.mu.Unlock()
	if pd.closed {
		return err
	}
	pd.closed = true
	if rc := C.ibv_dealloc_pd(pd.pd); rc != 0 {
		err = errors.Join(err, fmt.Errorf("deallocate protection domain on %s: %w", pd.c.name, errnoErr(rc)))
	}
	pd.c.mu.Lock()
	delete(pd.c.pds, pd)
	pd.c.mu.Unlock()
	live.pds.Add(-1)
	return err
}

// MR is a registered memory region (struct ibv_mr).
type MR struct {
	pd     *PD
	mr     *C.struct_ibv_mr
	addr   uintptr
	length int
	lkey   uint32
	rkey   uint32
	once   sync.Once
	err    error
}

// RegisterMR registers buf (memory not managed by the Go garbage collector: shared memory,
// mmap'd or C memory) with the given access.
func (pd *PD) RegisterMR(buf []byte, access Access) (*MR, error) {
	if len(buf) == 0 {
		return nil, fmt.Errorf("register memory region: empty buffer")
	}
	return pd.RegisterMRAddr(uintptr(unsafe.Pointer(&buf[0])), len(buf), access)
}

// RegisterMRAddr registers length bytes at addr (see RegisterMR).
func (pd *PD) RegisterMRAddr(addr uintptr, length int, access Access) (*MR, error) {
	pd.mu.Lock()
	defer pd.mu.Unlock()
	if pd.closed {
		return nil, ErrClosed
	}
	m, err := C.rc_reg_mr(pd.pd, C.uintptr_t(addr), C.size_t(length), C.int(access))
	if m == nil {
		return nil, fmt.Errorf("ibv_reg_mr %d bytes at %#x on %s: %w", length, addr, pd.c.name, cErr(err))
	}
	mr := &MR{pd: pd, mr: m, addr: addr, length: length, lkey: uint32(m.lkey), rkey: uint32(m.rkey)}
	pd.mrs[mr] = struct{}{}
	live.mrs.Add(1)
	return mr, nil
}

// Addr returns the registered start address.
func (mr *MR) Addr() uintptr { return mr.addr }

// Len returns the registered length in bytes.
func (mr *MR) Len() int { return mr.length }

// LKey returns the local key.
func (mr *MR) LKey() uint32 { return mr.lkey }

// RKey returns the remote key.
func (mr *MR) RKey() uint32 { return mr.rkey }

// Close deregisters the MR. Idempotent.
func (mr *MR) Close() error {
	mr.once.Do(func() {
		if rc := C.ibv_dereg_mr(mr.mr); rc != 0 {
			mr.err = fmt.Errorf("ibv_dereg_mr %d bytes at %#x: %w", mr.length, mr.addr, errnoErr(rc))
		}
		mr.pd.mu.Lock()
		delete(mr.pd.mrs, mr)
		mr.pd.mu.Unlock()
		live.mrs.Add(-1)
	})
	return mr.err
}

// CQ is a completion queue (struct ibv_cq), with its own completion channel when created
// with Notify.
type CQ struct {
	c       *Context
	cq      *C.struct_ibv_cq
	ch      *C.struct_ibv_comp_channel
	entries int
	notify  bool
	// evf is a duplicate of the completion channel's descriptor in Go's network poller: a
	// goroutine waiting for an event parks there, with no thread of its own blocked in a
	// system call, and wakes on the thread that finds it ready.
	evf      *os.File
	evRaw    syscall.RawConn
	evClosed atomic.Bool // set before evf closes: a waiter woken by that returns ErrClosed

	mu     sync.Mutex // serializes Poll (scratch) and Close
	closed bool
	wcs    *C.struct_rc_wc
}

// CreateCQ creates a completion queue of at least cfg.Entries entries (clamped to max_cqe).
func (c *Context) CreateCQ(cfg CQConfig) (cq *CQ, err error) {
	if cfg.Entries <= 0 {
		return nil, fmt.Errorf("create completion queue on %s: Entries must be > 0, got %d", c.name, cfg.Entries)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	n := min(cfg.Entries, c.attr.MaxCQE)
	cq = &CQ{c: c, notify: cfg.Notify}
	defer func() {
		if err != nil {
			_ = cq.free()
		}
	}()
	if cfg.Notify {
		ch, err := C.ibv_create_comp_channel(c.ctx)
		if ch == nil {
			return nil, fmt.Errorf("create completion channel on %s: %w", c.name, cErr(err))
		}
		cq.ch = ch
		live.channels.Add(1)
		if rc := C.rc_set_nonblock(ch.fd); rc != 0 {
			return nil, fmt.Errorf("completion channel on %s: set O_NONBLOCK: %w", c.name, errnoErr(rc))
		}
		if err := cq.pollable(); err != nil {
			return nil, fmt.Errorf("completion channel on %s: %w", c.name, err)
		}
	}
	p, cerr := C.ibv_create_cq(c.ctx, C.int(n), nil, cq.ch, 0)
	if p == nil {
		return nil, fmt.Errorf("create completion queue of %d entries on %s: %w", n, c.name, cErr(cerr))
	}
	cq.cq = p
	live.cqs.Add(1)
	cq.entries = int(p.cqe)
	cq.wcs = (*C.struct_rc_wc)(C.calloc(pollChunk, C.size_t(unsafe.Sizeof(C.struct_rc_wc{}))))
	if cq.wcs == nil {
		return nil, fmt.Errorf("create completion queue on %s: out of memory", c.name)
	}
	c.cqs[cq] = struct{}{}
	return cq, nil
}

// pollable puts a duplicate of the (non-blocking) completion channel's descriptor into
// Go's network poller (os.NewFile registers a non-blocking descriptor).
func (cq *CQ) pollable() error {
	fd, err := unix.FcntlInt(uintptr(cq.ch.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("duplicate descriptor: %w", err)
	}
	cq.evf = os.NewFile(uintptr(fd), "completion channel")
	if cq.evRaw, err = cq.evf.SyscallConn(); err != nil {
		return fmt.Errorf("descriptor in the poller: %w", err)
	}
	return nil
}

// closeEvents closes the poller's descriptor, which wakes a waiting waitEvent (ErrClosed).
// It must not run under cq.mu: Close waits for a waiter's attempt, which takes cq.mu.
func (cq *CQ) closeEvents() {
	if cq.evf != nil {
		cq.evClosed.Store(true)
		_ = cq.evf.Close() // a second Close reports os.ErrClosed: nothing to do
	}
}

// free releases the CQ's resources (constructor failure and Close).
func (cq *CQ) free() error {
	var errs []error
	cq.closeEvents()
	if cq.cq != nil {
		if rc := C.ibv_destroy_cq(cq.cq); rc != 0 {
			errs = append(errs, fmt.Errorf("destroy completion queue on %s: %w", cq.c.name, errnoErr(rc)))
		}
		cq.cq = nil
		live.cqs.Add(-1)
	}
	if cq.ch != nil {
		if rc := C.ibv_destroy_comp_channel(cq.ch); rc != 0 {
			errs = append(errs, fmt.Errorf("destroy completion channel on %s: %w", cq.c.name, errnoErr(rc)))
		}
		cq.ch = nil
		live.channels.Add(-1)
	}
	if cq.wcs != nil {
		C.free(unsafe.Pointer(cq.wcs))
		cq.wcs = nil
	}
	return errors.Join(errs...)
}

// Entries returns the CQ's actual size.
func (cq *CQ) Entries() int { return cq.entries }

// Poll fills wcs with up to len(wcs) completions and returns how many it got (0 when the CQ
// is empty). It crosses into C once per 64 completions.
func (cq *CQ) Poll(wcs []WorkCompletion) (int, error) {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.closed {
		return 0, ErrClosed
	}
	got := 0
	for got < len(wcs) {
		crossings.Add(1)
		n := C.rc_poll(cq.cq, cq.wcs, C.int(min(len(wcs)-got, pollChunk)))
		if n < 0 {
			return got, fmt.Errorf("poll completion queue on %s: ibv_poll_cq returned %d", cq.c.name, int(n))
		}
		for _, w := range unsafe.Slice(cq.wcs, int(n)) {
			wcs[got] = WorkCompletion{ID: uint64(w.id), Status: WCStatus(w.status), Opcode: WCOpcode(w.opcode),
				ByteLen: uint32(w.byte_len), Imm: uint32(w.imm), HasImm: w.with_imm != 0,
				QPN: uint32(w.qp_num), VendorErr: uint32(w.vendor_err)}
			got++
		}
		if int(n) < pollChunk {
			break
		}
	}
	return got, nil
}

// PollWait polls like Poll but, while the CQ is empty, sleeps on its completion channel
// (the CQ must be created with Notify) until a completion arrives or ctx is done.
func (cq *CQ) PollWait(ctx context.Context, wcs []WorkCompletion) (int, error) {
	if !cq.notify {
		return 0, fmt.Errorf("PollWait on %s: completion queue created without Notify", cq.c.name)
	}
	for {
		if n, err := cq.Poll(wcs); n > 0 || err != nil {
			return n, err
		}
		// Arm, then poll again: a completion that arrived before arming raises no event.
		if err := cq.arm(); err != nil {
			return 0, err
		}
		if n, err := cq.Poll(wcs); n > 0 || err != nil {
			return n, err
		}
		if err := cq.waitEvent(ctx); err != nil {
			return 0, err
		}
	}
}

// Arm requests one completion event for the next completion (the CQ must be
// created with Notify). Poll again after arming: a completion that arrived
// before it raises no event.
func (cq *CQ) Arm() error {
	if !cq.notify {
		return fmt.Errorf("arm completion queue on %s: created without Notify", cq.c.name)
	}
	return cq.arm()
}

// WaitEvent sleeps until the completion event requested by Arm arrives, ctx
// is done or the CQ is closed.
func (cq *CQ) WaitEvent(ctx context.Context) error {
	if !cq.notify {
		return fmt.Errorf("wait on completion queue on %s: created without Notify", cq.c.name)
	}
	return cq.waitEvent(ctx)
}

func (cq *CQ) arm() error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.closed {
		return ErrClosed
	}
	crossings.Add(1)
	if rc := C.rc_req_notify(cq.cq, 0); rc != 0 {
		return fmt.Errorf("arm completion queue on %s: %w", cq.c.name, errnoErr(rc))
	}
	return nil
}

// EachEvent calls fn after each completion event (each one requested by
// Arm) until ctx is done or the CQ is closed, and returns why it stopped. It
// is WaitEvent in a loop that sets its cancellation up once, not per event.
func (cq *CQ) EachEvent(ctx context.Context, fn func()) error {
	if !cq.notify {
		return fmt.Errorf("wait on completion queue on %s: created without Notify", cq.c.name)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	defer cq.cancelWaitOn(ctx)()
	for {
		switch err := cq.readEvent(); {
		case errors.Is(err, os.ErrDeadlineExceeded):
			if err := ctx.Err(); err != nil {
				return err
			}
			// An earlier wait's late cancellation: ctx's own, should it come
			// now, sets the deadline again after this.
			_ = cq.evf.SetReadDeadline(time.Time{})
		case err != nil:
			return err
		default:
			fn()
		}
	}
}

// waitEvent waits for one completion event in Go's network poller until ctx is done (a
// past read deadline wakes it) or the CQ is closed.
func (cq *CQ) waitEvent(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		stop := cq.cancelWaitOn(ctx)
		err := cq.readEvent()
		stop()
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		// ctx is done (checked above), or a stale cancellation: wait again
	}
}

// cancelWaitOn clears a deadline an earlier wait's cancellation may have set
// and has ctx's end wake the waits from now on (a past read deadline) until
// the returned stop.
func (cq *CQ) cancelWaitOn(ctx context.Context) (stop func() bool) {
	_ = cq.evf.SetReadDeadline(time.Time{})
	return context.AfterFunc(ctx, func() { _ = cq.evf.SetReadDeadline(time.Unix(1, 0)) })
}

// readEvent waits in the poller for one completion event: nil, ErrClosed,
// os.ErrDeadlineExceeded (a cancellation, perhaps an earlier wait's) or what
// failed.
func (cq *CQ) readEvent() error {
	var got error
	err := cq.evRaw.Read(func(uintptr) bool {
		got = cq.getEvent()
		return !errors.Is(got, errNoEvent)
	})
	switch {
	case err != nil && cq.evClosed.Load():
		return ErrClosed
	case errors.Is(err, os.ErrDeadlineExceeded):
		return err
	case err != nil:
		return fmt.Errorf("wait for completion event on %s: %w", cq.c.name, err)
	}
	return got
}

var errNoEvent = errors.New("no completion event pending")

// getEvent takes one pending completion event and acknowledges it (errNoEvent when none).
func (cq *CQ) getEvent() error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.closed {
		return ErrClosed
	}
	crossings.Add(1)
	switch rc := C.rc_get_event(cq.ch); rc {
	case 1:
		return nil
	case 0:
		return errNoEvent
	default:
		return fmt.Errorf("completion event on %s: %w", cq.c.name, errnoErr(rc))
	}
}

// Close closes the QPs that use this CQ, then destroys it. Idempotent.
func (cq *CQ) Close() error {
	var errs []error
	cq.closeEvents()
	for pd := range cq.c.pdsSnapshot() {
		pd.mu.Lock()
		qps := slices.Collect(maps.Keys(pd.qps))
		pd.mu.Unlock()
		for _, qp := range qps {
			if qp.sendCQ == cq || qp.recvCQ == cq {
				errs = append(errs, qp.Close())
			}
		}
	}
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.closed {
		return errors.Join(errs...)
	}
	cq.closed = true
	errs = append(errs, cq.free())
	cq.c.mu.Lock()
	delete(cq.c.cqs, cq)
	cq.c.mu.Unlock()
	return errors.Join(errs...)
}

func (c *Context) pdsSnapshot() map[*PD]struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[*PD]struct{}, len(c.pds))
	for pd := range c.pds {
		out[pd] = struct{}{}
	}
	return out
}

// QP is an RC queue pair (struct ibv_qp).
type QP struct {
	pd             *PD
	qp             *C.struct_ibv_qp
	sendCQ, recvCQ *CQ
	qpn            uint32
	caps           QPCaps
	clamped        string

	sendMu  sync.Mutex
	swr     *C.struct_rc_swr
	sendWR  *C.struct_ibv_send_wr
	sendSGE *C.struct_ibv_sge
	recvMu  sync.Mutex
	rwr     *C.struct_rc_rwr
	recvWR  *C.struct_ibv_recv_wr
	recvSGE *C.struct_ibv_sge
	closed  bool
}

const postChunk = 256 // work requests per cgo call

// CreateQP creates an RC queue pair. Sizes above the device's limits are clamped (see
// QP.Clamped); the actual sizes are in QP.Caps.
func (pd *PD) CreateQP(cfg QPConfig) (qp *QP, err error) {
	if cfg.SendCQ == nil || cfg.RecvCQ == nil {
		return nil, fmt.Errorf("create queue pair on %s: SendCQ and RecvCQ are required", pd.c.name)
	}
	if cfg.MaxSendWR <= 0 && cfg.MaxRecvWR <= 0 {
		return nil, fmt.Errorf("create queue pair on %s: MaxSendWR or MaxRecvWR must be > 0", pd.c.name)
	}
	a := pd.c.attr
	want := [5]int{cfg.MaxSendWR, cfg.MaxRecvWR, max(cfg.MaxSendSGE, 1), max(cfg.MaxRecvSGE, 1), cfg.MaxInlineData}
	limit := [5]int{a.MaxQPWR, a.MaxQPWR, a.MaxSGE, a.MaxSGE, want[4]}
	names := [5]string{"max_send_wr", "max_recv_wr", "max_send_sge", "max_recv_sge", "max_inline_data"}
	var caps [5]C.uint32_t
	var notes []string
	for i := range want {
		v := want[i]
		if limit[i] > 0 && v > limit[i] {
			notes = append(notes, fmt.Sprintf("%s %d -> %d", names[i], v, limit[i]))
			v = limit[i]
		}
		caps[i] = C.uint32_t(v)
	}
	pd.mu.Lock()
	defer pd.mu.Unlock()
	if pd.closed {
		return nil, ErrClosed
	}
	sig := C.int(0)
	if cfg.SignalAll {
		sig = 1
	}
	q, cerr := C.rc_create_qp(pd.pd, cfg.SendCQ.cq, cfg.RecvCQ.cq, &caps[0], sig)
	if q == nil {
		return nil, fmt.Errorf("create RC queue pair on %s (send_wr=%d recv_wr=%d): %w", pd.c.name, caps[0], caps[1], cErr(cerr))
	}
	qp = &QP{pd: pd, qp: q, qpn: uint32(q.qp_num), sendCQ: cfg.SendCQ, recvCQ: cfg.RecvCQ,
		caps: QPCaps{MaxSendWR: int(caps[0]), MaxRecvWR: int(caps[1]), MaxSendSGE: int(caps[2]),
			MaxRecvSGE: int(caps[3]), MaxInlineData: int(caps[4])}}
	live.qps.Add(1)
	if len(notes) > 0 {
		qp.clamped = fmt.Sprintf("clamped to the limits of %s: %v", pd.c.name, notes)
	}
	defer func() {
		if err != nil {
			_ = qp.destroy()
		}
	}()
	qp.swr = (*C.struct_rc_swr)(C.calloc(postChunk, C.size_t(unsafe.Sizeof(C.struct_rc_swr{}))))
	qp.sendWR = (*C.struct_ibv_send_wr)(C.calloc(postChunk, C.size_t(unsafe.Sizeof(C.struct_ibv_send_wr{}))))
	qp.sendSGE = (*C.struct_ibv_sge)(C.calloc(postChunk, C.size_t(unsafe.Sizeof(C.struct_ibv_sge{}))))
	qp.rwr = (*C.struct_rc_rwr)(C.calloc(postChunk, C.size_t(unsafe.Sizeof(C.struct_rc_rwr{}))))
	qp.recvWR = (*C.struct_ibv_recv_wr)(C.calloc(postChunk, C.size_t(unsafe.Sizeof(C.struct_ibv_recv_wr{}))))
	qp.recvSGE = (*C.struct_ibv_sge)(C.calloc(postChunk, C.size_t(unsafe.Sizeof(C.struct_ibv_sge{}))))
	if qp.swr == nil || qp.sendWR == nil || qp.sendSGE == nil || qp.rwr == nil || qp.recvWR == nil || qp.recvSGE == nil {
		return nil, fmt.Errorf("create queue pair on %s: out of memory", pd.c.name)
	}
	pd.qps[qp] = struct{}{}
	return qp, nil
}

// QPN returns the queue pair number.
func (qp *QP) QPN() uint32 { return qp.qpn }

// modify runs a state change or query unless the QP is closed (Close waits for it).
func (qp *QP) modify(f func() C.int) error {
	qp.sendMu.Lock()
	defer qp.sendMu.Unlock()
	if qp.closed {
		return ErrClosed
	}
	if rc := f(); rc != 0 {
		return errnoErr(rc)
	}
	return nil
}

// Caps returns the actual capacities.
func (qp *QP) Caps() QPCaps { return qp.caps }

// Clamped says which requested sizes were lowered to the device's limits ("" if none).
func (qp *QP) Clamped() string { return qp.clamped }

// ToInit moves the QP from RESET to INIT on port with the given remote access.
func (qp *QP) ToInit(port int, access Access) error {
	if err := qp.modify(func() C.int { return C.rc_modify_init(qp.qp, C.int(port), C.int(access)) }); err != nil {
		return fmt.Errorf("modify QP %d to INIT (port %d): %w", qp.QPN(), port, err)
	}
	return nil
}

// ToRTR moves the QP from INIT to RTR.
func (qp *QP) ToRTR(r RTRConfig) error {
	gid := r.RemoteGID.To16()
	if gid == nil {
		return fmt.Errorf("modify QP %d to RTR: invalid remote GID %v", qp.QPN(), r.RemoteGID)
	}
	if r.PathMTU.Bytes() == 0 {
		return fmt.Errorf("modify QP %d to RTR: invalid path MTU %d", qp.QPN(), int(r.PathMTU))
	}
	var dgid [16]C.uint8_t
	for i := range dgid {
		dgid[i] = C.uint8_t(gid[i])
	}
	err := qp.modify(func() C.int {
		return C.rc_modify_rtr(qp.qp, C.int(r.PathMTU), C.uint32_t(r.RemoteQPN), C.uint32_t(r.RemotePSN&0xffffff),
			&dgid[0], C.int(r.SGIDIndex), C.int(r.Port), C.int(r.HopLimit),
			C.int(r.TrafficClass), C.int(r.MaxDestRdAtomic), C.int(r.MinRNRTimer))
	})
	if err != nil {
		return fmt.Errorf("modify QP %d to RTR (remote QP %d, GID %v, sgid index %d, mtu %v): %w",
			qp.QPN(), r.RemoteQPN, r.RemoteGID, r.SGIDIndex, r.PathMTU, err)
	}
	return nil
}

// ToRTS moves the QP from RTR to RTS.
func (qp *QP) ToRTS(r RTSConfig) error {
	err := qp.modify(func() C.int {
		return C.rc_modify_rts(qp.qp, C.uint32_t(r.PSN&0xffffff), C.int(r.Timeout), C.int(r.RetryCount),
			C.int(r.RNRRetry), C.int(r.MaxRdAtomic))
	})
	if err != nil {
		return fmt.Errorf("modify QP %d to RTS: %w", qp.QPN(), err)
	}
	return nil
}

// ToError moves the QP to ERR: outstanding work requests complete with WR_FLUSH_ERR.
func (qp *QP) ToError() error {
	if err := qp.modify(func() C.int { return C.rc_modify_err(qp.qp) }); err != nil {
		return fmt.Errorf("modify QP %d to ERR: %w", qp.QPN(), err)
	}
	return nil
}

// State queries the QP's current state.
func (qp *QP) State() (QPState, error) {
	var st C.int
	if err := qp.modify(func() C.int { return C.rc_qp_state(qp.qp, &st) }); err != nil {
		return 0, fmt.Errorf("query QP %d: %w", qp.QPN(), err)
	}
	return QPState(st), nil
}

// PostSend posts wrs as chains of up to 256 work requests per call into C.
func (qp *QP) PostSend(wrs []SendWR) error {
	qp.sendMu.Lock()
	defer qp.sendMu.Unlock()
	if qp.closed {
		return ErrClosed
	}
	for base := 0; base < len(wrs); base += postChunk {
		chunk := wrs[base:min(base+postChunk, len(wrs))]
		dst := unsafe.Slice(qp.swr, len(chunk))
		for i, w := range chunk {
			dst[i] = cSendWR(w)
		}
		var bad C.int
		crossings.Add(1)
		if rc := C.rc_post_send(qp.qp, qp.swr, C.int(len(chunk)), qp.sendWR, qp.sendSGE, &bad); rc != 0 {
			i := base + int(bad)
			return fmt.Errorf("post send work request %d of %d (wr_id=%d %v) on QP %d: %w",
				i, len(wrs), wrs[min(i, len(wrs)-1)].ID, wrs[min(i, len(wrs)-1)].Opcode, qp.QPN(), errnoErr(rc))
		}
	}
	return nil
}

// PostRecv posts wrs as chains of up to 256 receive work requests per call into C.
func (qp *QP) PostRecv(wrs []RecvWR) error {
	qp.recvMu.Lock()
	defer qp.recvMu.Unlock()
	if qp.closed {
		return ErrClosed
	}
	for base := 0; base < len(wrs); base += postChunk {
		chunk := wrs[base:min(base+postChunk, len(wrs))]
		dst := unsafe.Slice(qp.rwr, len(chunk))
		for i, w := range chunk {
			dst[i] = C.struct_rc_rwr{id: C.uint64_t(w.ID), addr: C.uint64_t(w.Addr), len: C.uint32_t(w.Length), lkey: C.uint32_t(w.LKey)}
		}
		var bad C.int
		crossings.Add(1)
		if rc := C.rc_post_recv(qp.qp, qp.rwr, C.int(len(chunk)), qp.recvWR, qp.recvSGE, &bad); rc != 0 {
			i := base + int(bad)
			return fmt.Errorf("post receive work request %d of %d (wr_id=%d) on QP %d: %w",
				i, len(wrs), wrs[min(i, len(wrs)-1)].ID, qp.QPN(), errnoErr(rc))
		}
	}
	return nil
}

func (qp *QP) destroy() error {
	var err error
	if qp.qp != nil {
		if rc := C.ibv_destroy_qp(qp.qp); rc != 0 {
			err = fmt.Errorf("destroy QP %d: %w", qp.qpn, errnoErr(rc))
		}
		qp.qp = nil
		live.qps.Add(-1)
	}
	for _, p := range []unsafe.Pointer{unsafe.Pointer(qp.swr), unsafe.Pointer(qp.sendWR), unsafe.Pointer(qp.sendSGE),
		unsafe.Pointer(qp.rwr), unsafe.Pointer(qp.recvWR), unsafe.Pointer(qp.recvSGE)} {
		C.free(p)
	}
	qp.swr, qp.sendWR, qp.sendSGE, qp.rwr, qp.recvWR, qp.recvSGE = nil, nil, nil, nil, nil, nil
	return err
}

// Close destroys the QP. Idempotent.
func (qp *QP) Close() error {
	qp.sendMu.Lock()
	qp.recvMu.Lock()
	defer qp.sendMu.Unlock()
	defer qp.recvMu.Unlock()
	if qp.closed {
		return nil
	}
	qp.closed = true
	qpn := qp.QPN()
	err := qp.destroy()
	qp.pd.mu.Lock()
	delete(qp.pd.qps, qp)
	qp.pd.mu.Unlock()
	if err != nil {
		return fmt.Errorf("close QP %d: %w", qpn, err)
	}
	return nil
}

// Mmap returns n bytes of anonymous, page-aligned memory outside the Go heap, suitable for
// RegisterMR; release it with Munmap.
func Mmap(n int) ([]byte, error) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes: %w", n, err)
	}
	return b, nil
}

// Munmap releases memory from Mmap.
func Munmap(b []byte) error { return unix.Munmap(b) }

// Compile-time checks that the Go constants equal libibverbs' (a mismatch overflows uint).
const (
	_ uint = 0 - uint(int(C.IBV_ACCESS_LOCAL_WRITE)^int(AccessLocalWrite))
	_ uint = 0 - uint(int(C.IBV_ACCESS_REMOTE_WRITE)^int(AccessRemoteWrite))
	_ uint = 0 - uint(int(C.IBV_ACCESS_REMOTE_READ)^int(AccessRemoteRead))
	_ uint = 0 - uint(int(C.IBV_ACCESS_REMOTE_ATOMIC)^int(AccessRemoteAtomic))
	_ uint = 0 - uint(int(C.IBV_WR_RDMA_WRITE)^int(OpRDMAWrite))
	_ uint = 0 - uint(int(C.IBV_WR_RDMA_WRITE_WITH_IMM)^int(OpRDMAWriteWithImm))
	_ uint = 0 - uint(int(C.IBV_WR_SEND)^int(OpSend))
	_ uint = 0 - uint(int(C.IBV_WR_SEND_WITH_IMM)^int(OpSendWithImm))
	_ uint = 0 - uint(int(C.IBV_WR_RDMA_READ)^int(OpRDMARead))
	_ uint = 0 - uint(int(C.IBV_MTU_256)^int(MTU256))
	_ uint = 0 - uint(int(C.IBV_MTU_4096)^int(MTU4096))
	_ uint = 0 - uint(int(C.IBV_PORT_ACTIVE)^int(PortActive))
	_ uint = 0 - uint(int(C.IBV_QPS_RTS)^int(QPRTS))
	_ uint = 0 - uint(int(C.IBV_QPS_ERR)^int(QPErr))
	_ uint = 0 - uint(int(C.IBV_WC_RETRY_EXC_ERR)^int(WCRetryExcErr))
	_ uint = 0 - uint(int(C.IBV_WC_RNR_RETRY_EXC_ERR)^int(WCRNRRetryExcErr))
	_ uint = 0 - uint(int(C.IBV_WC_REM_ACCESS_ERR)^int(WCRemAccessErr))
	_ uint = 0 - uint(int(C.IBV_WC_WR_FLUSH_ERR)^int(WCWRFlushErr))
	_ uint = 0 - uint(int(C.IBV_WC_TM_RNDV_INCOMPLETE)^(len(wcStatusNamesArr)-1))
	_ uint = 0 - uint(int(C.IBV_WC_RECV)^int(WCRecv))
	_ uint = 0 - uint(int(C.IBV_WC_RECV_RDMA_WITH_IMM)^int(WCRecvRDMAWithImm))
	_ uint = 0 - uint(int(C.IBV_WC_RDMA_WRITE)^int(WCRDMAWrite))
	_ uint = 0 - uint(int(C.IBV_GID_TYPE_ROCE_V2)^int(GIDTypeRoCEv2))
)
