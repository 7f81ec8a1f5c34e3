//go:build linux && cgo

package ofi

/*
#cgo LDFLAGS: -lfabric
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

// Most of libfabric's API is static inline functions calling through ops tables, and
// addresses and contexts are integers on the Go side: cgo calls these wrappers.

#define OFI_API FI_VERSION(1, 17)

static int ofi_getinfo(const char *prov, const char *dom, const char *node, const char *service,
                       int source, uint64_t caps, uint64_t mode, int mr_mode, uint64_t tx_op_flags,
                       uint64_t msg_order, struct fi_info **out) {
	struct fi_info *h = fi_allocinfo();
	if (!h) return -FI_ENOMEM;
	h->caps = caps;
	h->mode = mode;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->mr_mode = mr_mode;
	h->tx_attr->op_flags = tx_op_flags;
	h->tx_attr->msg_order = msg_order;
	h->rx_attr->msg_order = msg_order;
	if (prov) h->fabric_attr->prov_name = strdup(prov);
	if (dom) h->domain_attr->name = strdup(dom);
	int rc = fi_getinfo(OFI_API, node, service, source ? FI_SOURCE : 0, h, out);
	fi_freeinfo(h);
	return rc;
}

static int ofi_fabric(struct fi_info *i, struct fid_fabric **f) { return fi_fabric(i->fabric_attr, f, NULL); }
static int ofi_domain(struct fid_fabric *f, struct fi_info *i, struct fid_domain **d) { return fi_domain(f, i, d, NULL); }
static int ofi_close(struct fid *f) { return fi_close(f); }
static struct fid *ofi_fid_fabric(struct fid_fabric *x) { return &x->fid; }
static struct fid *ofi_fid_domain(struct fid_domain *x) { return &x->fid; }
static struct fid *ofi_fid_av(struct fid_av *x) { return &x->fid; }
static struct fid *ofi_fid_cq(struct fid_cq *x) { return &x->fid; }
static struct fid *ofi_fid_ep(struct fid_ep *x) { return &x->fid; }
static struct fid *ofi_fid_mr(struct fid_mr *x) { return &x->fid; }

static int ofi_av_open(struct fid_domain *d, size_t count, struct fid_av **av) {
	struct fi_av_attr a;
	memset(&a, 0, sizeof(a));
	a.type = FI_AV_TABLE;
	a.count = count;
	return fi_av_open(d, &a, av, NULL);
}

static int ofi_av_insert(struct fid_av *av, const void *addr, uint64_t *out) {
	fi_addr_t fa = FI_ADDR_NOTAVAIL;
	int rc = fi_av_insert(av, addr, 1, &fa, 0, NULL);
	*out = fa;
	return rc;
}

static int ofi_cq_open(struct fid_domain *d, size_t size, int wait, struct fid_cq **cq) {
	struct fi_cq_attr a;
	memset(&a, 0, sizeof(a));
	a.size = size;
	a.format = FI_CQ_FORMAT_DATA;
	a.wait_obj = wait == 2 ? FI_WAIT_FD : wait ? FI_WAIT_UNSPEC : FI_WAIT_NONE;
	return fi_cq_open(d, &a, cq, NULL);
}

static int ofi_cq_waitfd(struct fid_cq *cq, int *fd) { return fi_control(&cq->fid, FI_GETWAIT, fd); }

// fi_trywait over up to 64 completion queues: 0 when the caller may block on their wait fds.
static int ofi_trywait(struct fid_fabric *f, struct fid_cq **cqs, int n) {
	struct fid *fids[64];
	if (n > 64) n = 64;
	for (int i = 0; i < n; i++) fids[i] = &cqs[i]->fid;
	return fi_trywait(f, fids, n);
}

struct ofi_cqe {
	uint64_t ctx, flags, len, data;
};

static void ofi_copy_cqe(struct fi_cq_data_entry *e, struct ofi_cqe *out, ssize_t n) {
	for (ssize_t i = 0; i < n; i++) {
		out[i].ctx = (uint64_t)(uintptr_t)e[i].op_context;
		out[i].flags = e[i].flags;
		out[i].len = e[i].len;
		out[i].data = e[i].data;
	}
}

// Reads up to n (<= 64) entries; timeout < 0: fi_cq_read, else fi_cq_sread with it (ms).
static ssize_t ofi_cq_read(struct fid_cq *cq, struct ofi_cqe *out, size_t n, int timeout) {
	struct fi_cq_data_entry e[64];
	if (n > 64) n = 64;
	ssize_t got = timeout < 0 ? fi_cq_read(cq, e, n) : fi_cq_sread(cq, e, n, NULL, timeout);
	if (got > 0) ofi_copy_cqe(e, out, got);
	return got;
}

// Reads one error entry and its provider text into text (len bytes).
static ssize_t ofi_cq_readerr(struct fid_cq *cq, struct ofi_cqe *out, int *err, int *prov_errno,
                              char *text, size_t len) {
	struct fi_cq_err_entry e;
	memset(&e, 0, sizeof(e));
	ssize_t rc = fi_cq_readerr(cq, &e, 0);
	if (rc < 0) return rc;
	out->ctx = (uint64_t)(uintptr_t)e.op_context;
	out->flags = e.flags;
	out->len = e.len;
	out->data = e.data;
	*err = e.err;
	*prov_errno = e.prov_errno;
	text[0] = 0;
	const char *s = fi_cq_strerror(cq, e.prov_errno, e.err_data, text, len);
	if (s && s != text) snprintf(text, len, "%s", s);
	return rc;
}

static int ofi_endpoint(struct fid_domain *d, struct fi_info *i, struct fid_ep **ep) { return fi_endpoint(d, i, ep, NULL); }
static int ofi_ep_bind(struct fid_ep *ep, struct fid *f, uint64_t flags) { return fi_ep_bind(ep, f, flags); }
static int ofi_enable(struct fid_ep *ep) { return fi_enable(ep); }
static int ofi_getname(struct fid_ep *ep, void *addr, size_t *len) { return fi_getname(&ep->fid, addr, len); }

static int ofi_mr_reg(struct fid_domain *d, uintptr_t buf, size_t len, uint64_t access, uint64_t key,
                      struct fid_mr **mr) {
	return fi_mr_reg(d, (const void *)buf, len, access, 0, key, 0, mr, NULL);
}
static uint64_t ofi_mr_key(struct fid_mr *mr) { return fi_mr_key(mr); }
static void *ofi_mr_desc(struct fid_mr *mr) { return fi_mr_desc(mr); }

static ssize_t ofi_send(struct fid_ep *ep, uintptr_t buf, size_t len, void *desc, uint64_t dest, uint64_t ctx) {
	return fi_send(ep, (const void *)buf, len, desc, dest, (void *)(uintptr_t)ctx);
}
static ssize_t ofi_senddata(struct fid_ep *ep, uintptr_t buf, size_t len, void *desc, uint64_t data, uint64_t dest,
                            uint64_t ctx) {
	return fi_senddata(ep, (const void *)buf, len, desc, data, dest, (void *)(uintptr_t)ctx);
}
static ssize_t ofi_recv(struct fid_ep *ep, uintptr_t buf, size_t len, void *desc, uint64_t src, uint64_t ctx) {
	return fi_recv(ep, (void *)buf, len, desc, src, (void *)(uintptr_t)ctx);
}
static ssize_t ofi_write(struct fid_ep *ep, uintptr_t buf, size_t len, void *desc, uint64_t dest, uint64_t addr,
                         uint64_t key, uint64_t ctx) {
	return fi_write(ep, (const void *)buf, len, desc, dest, addr, key, (void *)(uintptr_t)ctx);
}
static ssize_t ofi_writedata(struct fid_ep *ep, uintptr_t buf, size_t len, void *desc, uint64_t data, uint64_t dest,
                             uint64_t addr, uint64_t key, uint64_t ctx) {
	return fi_writedata(ep, (const void *)buf, len, desc, data, dest, addr, key, (void *)(uintptr_t)ctx);
}

#include "post.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
	"unsafe"
)

// callErr turns a negative libfabric return code into a *CallError naming the call.
func callErr(call string, rc C.int) error {
	if rc < 0 {
		rc = -rc
	}
	return &CallError{Call: call, Errno: int(rc), Text: C.GoString(C.fi_strerror(rc))}
}

func cstr(s string) *C.char {
	if s == "" {
		return nil
	}
	return C.CString(s)
}

func getinfo(h Hints) (*C.struct_fi_info, error) {
	applyEnvDefaults() // before libfabric's first call initialises it
	prov, dom, node, svc := cstr(h.Provider), cstr(h.Domain), cstr(h.Node), cstr(h.Service)
	defer func() {
		for _, p := range []*C.char{prov, dom, node, svc} {
			C.free(unsafe.Pointer(p))
		}
	}()
	source := C.int(0)
	if h.Source {
		source = 1
	}
	var list *C.struct_fi_info
	rc := C.ofi_getinfo(prov, dom, node, svc, source, C.uint64_t(h.Caps), C.uint64_t(SupportedModes),
		C.int(SupportedMRModes), C.uint64_t(txOpFlags(h)), C.uint64_t(h.MsgOrder), &list)
	if rc == -C.FI_ENODATA {
		return nil, fmt.Errorf("discover libfabric providers (%s): no provider matches (the binding honours mode bits %v and MR modes %v): %w",
			describeHints(h), SupportedModes, SupportedMRModes, callErr("fi_getinfo", rc))
	}
	if rc != 0 {
		return nil, fmt.Errorf("discover libfabric providers (%s): %w", describeHints(h), callErr("fi_getinfo", rc))
	}
	return list, nil
}

func txOpFlags(h Hints) uint64 {
	if h.DeliveryComplete {
		return C.FI_DELIVERY_COMPLETE
	}
	return 0
}

func describeHints(h Hints) string {
	s := fmt.Sprintf("provider %q domain %q caps %v endpoint FI_EP_RDM delivery-complete %v msg_order %v", h.Provider, h.Domain, h.Caps, h.DeliveryComplete, h.MsgOrder)
	if h.Node != "" || h.Service != "" {
		s += fmt.Sprintf(" node %q service %q source %v", h.Node, h.Service, h.Source)
	}
	return s
}

// Discover runs fi_getinfo with h and returns what each answer offers, in the provider's
// order of preference. No match is an error naming the hints.
func Discover(h Hints) ([]Info, error) {
	list, err := getinfo(h)
	if err != nil {
		return nil, err
	}
	defer C.fi_freeinfo(list)
	var out []Info
	for i := list; i != nil; i = i.next {
		out = append(out, infoOf(i))
	}
	return out, nil
}

func infoOf(i *C.struct_fi_info) Info {
	return Info{
		Provider:     C.GoString(i.fabric_attr.prov_name),
		Fabric:       C.GoString(i.fabric_attr.name),
		Domain:       C.GoString(i.domain_attr.name),
		Caps:         Caps(i.caps),
		Mode:         Mode(i.mode),
		MRMode:       MRMode(i.domain_attr.mr_mode),
		MaxMsgSize:   uint64(i.ep_attr.max_msg_size),
		CQDataSize:   int(i.domain_attr.cq_data_size),
		MRKeySize:    int(i.domain_attr.mr_key_size),
		InjectSize:   int(i.tx_attr.inject_size),
		TxSize:       int(i.tx_attr.size),
		RxSize:       int(i.rx_attr.size),
		DataProgress: Progress(i.domain_attr.data_progress),
		Threading:    Threading(i.domain_attr.threading),
		TxMsgOrder:   Order(i.tx_attr.msg_order),
		RxMsgOrder:   Order(i.rx_attr.msg_order),
	}
}

// Domain is an opened fabric and domain (fid_fabric, fid_domain) and the owner of
// everything created on it.
type Domain struct {
	info   *C.struct_fi_info
	fabric *C.struct_fid_fabric
	domain *C.struct_fid_domain
	about  Info
	txOps  uint64 // completion semantics for Post's transmit operations

	mu      sync.Mutex
	closed  bool
	nextKey uint64
	eps     map[*Endpoint]struct{}
	mrs     map[*MR]struct{}
	avs     map[*AV]struct{}
	cqs     map[*CQ]struct{}
}

// Open opens the first fabric and domain fi_getinfo offers for h.
func Open(h Hints) (*Domain, error) {
	list, err := getinfo(h)
	if err != nil {
		return nil, err
	}
	d := &Domain{info: C.fi_dupinfo(list), about: infoOf(list), nextKey: 1, txOps: txOpFlags(h),
		eps: map[*Endpoint]struct{}{}, mrs: map[*MR]struct{}{}, avs: map[*AV]struct{}{}, cqs: map[*CQ]struct{}{}}
	C.fi_freeinfo(list)
	if d.info == nil {
		return nil, fmt.Errorf("open libfabric domain (%s): fi_dupinfo failed", describeHints(h))
	}
	if rc := C.ofi_fabric(d.info, &d.fabric); rc != 0 {
		C.fi_freeinfo(d.info)
		return nil, fmt.Errorf("open fabric %q of provider %q: %w", d.about.Fabric, d.about.Provider, callErr("fi_fabric", rc))
	}
	live.fabrics.Add(1)
	if rc := C.ofi_domain(d.fabric, d.info, &d.domain); rc != 0 {
		err := callErr("fi_domain", rc)
		_ = d.Close()
		return nil, fmt.Errorf("open domain %q of provider %q: %w", d.about.Domain, d.about.Provider, err)
	}
	live.domains.Add(1)
	return d, nil
}

// Info is what the opened domain offers.
func (d *Domain) Info() Info { return d.about }

func (d *Domain) check() error {
	if d == nil || d.domain == nil {
		return ErrClosed
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	return nil
}

// Close closes every object created on the domain (endpoints, MRs, AVs, CQs), then the
// domain and the fabric. Idempotent.
func (d *Domain) Close() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	eps, mrs, avs, cqs := slices.Collect(maps.Keys(d.eps)), slices.Collect(maps.Keys(d.mrs)), slices.Collect(maps.Keys(d.avs)), slices.Collect(maps.Keys(d.cqs))
	d.mu.Unlock()
	var errs []error
	for _, ep := range eps {
		errs = append(errs, ep.Close())
	}
	for _, mr := range mrs {
		errs = append(errs, mr.Close())
	}
	for _, av := range avs {
		errs = append(errs, av.Close())
	}
	for _, cq := range cqs {
		errs = append(errs, cq.Close())
	}
	if d.domain != nil {
		if rc := C.ofi_close(C.ofi_fid_domain(d.domain)); rc != 0 {
			errs = append(errs, fmt.Errorf("close domain %q: %w", d.about.Domain, callErr("fi_close", rc)))
		}
		d.domain = nil
		live.domains.Add(-1)
	}
	if d.fabric != nil {
		if rc := C.ofi_close(C.ofi_fid_fabric(d.fabric)); rc != 0 {
			errs = append(errs, fmt.Errorf("close fabric %q: %w", d.about.Fabric, callErr("fi_close", rc)))
		}
		d.fabric = nil
		live.fabrics.Add(-1)
	}
	C.fi_freeinfo(d.info)
	d.info = nil
	return errors.Join(errs...)
}

// forget removes a closed child from the domain's sets.
func forget[K comparable](d *Domain, m map[K]struct{}, k K) {
	d.mu.Lock()
	delete(m, k)
	d.mu.Unlock()
}

// closeFid closes one libfabric object once; what names it for the error.
func closeFid(fid *C.struct_fid, what string, counter interface{ Add(int64) int64 }) error {
	counter.Add(-1)
	if rc := C.ofi_close(fid); rc != 0 {
		return fmt.Errorf("close %s: %w", what, callErr("fi_close", rc))
	}
	return nil
}

// AV is an address vector (FI_AV_TABLE).
type AV struct {
	d  *Domain
	av *C.struct_fid_av
}

// OpenAV opens an address vector for about count peers.
func (d *Domain) OpenAV(count int) (*AV, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	a := &AV{d: d}
	if rc := C.ofi_av_open(d.domain, C.size_t(count), &a.av); rc != 0 {
		return nil, fmt.Errorf("open address vector on domain %q: %w", d.about.Domain, callErr("fi_av_open", rc))
	}
	live.avs.Add(1)
	d.mu.Lock()
	d.avs[a] = struct{}{}
	d.mu.Unlock()
	return a, nil
}

// Insert adds a peer's endpoint name (Endpoint.Name on its side) and returns its address.
func (a *AV) Insert(name []byte) (Addr, error) {
	if a == nil || a.av == nil {
		return 0, ErrClosed
	}
	if len(name) == 0 {
		return 0, errors.New("insert into address vector: empty endpoint name")
	}
	p := C.CBytes(name)
	defer C.free(p)
	var out C.uint64_t
	rc := C.ofi_av_insert(a.av, p, &out)
	if rc < 0 {
		return 0, fmt.Errorf("insert a %d-byte endpoint name into the address vector: %w", len(name), callErr("fi_av_insert", rc))
	}
	if rc != 1 {
		return 0, fmt.Errorf("insert a %d-byte endpoint name into the address vector: fi_av_insert inserted %d addresses, want 1", len(name), int(rc))
	}
	return Addr(out), nil
}

// Close closes the address vector; close the endpoints bound to it first. Idempotent.
func (a *AV) Close() error {
	if a == nil || a.av == nil {
		return nil
	}
	err := closeFid(C.ofi_fid_av(a.av), "address vector", &live.avs)
	a.av = nil
	forget(a.d, a.d.avs, a)
	return err
}

// CQ is a completion queue (FI_CQ_FORMAT_DATA).
type CQ struct {
	d       *Domain
	cq      *C.struct_fid_cq
	fd      int // FI_WAIT_FD's file descriptor (-1: none)
	canWait bool
	noWait  string // why there is no wait object, when asked for
}

// OpenCQ opens a completion queue. With cfg.Wait it asks for a wait object and, where the
// provider refuses one, opens the CQ without (CanWait then says so, and why).
func (d *Domain) OpenCQ(cfg CQConfig) (*CQ, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	q := &CQ{d: d, fd: -1}
	if cfg.WaitFD {
		rc := C.ofi_cq_open(d.domain, C.size_t(cfg.Size), 2, &q.cq)
		if rc == 0 {
			var fd C.int
			if rc = C.ofi_cq_waitfd(q.cq, &fd); rc == 0 {
				q.canWait, q.fd = true, int(fd)
			} else {
				q.noWait = callErr("fi_control FI_GETWAIT", rc).Error()
				_ = C.ofi_close(C.ofi_fid_cq(q.cq))
				q.cq = nil
			}
		} else {
			q.noWait = callErr("fi_cq_open with FI_WAIT_FD", rc).Error()
		}
	}
	if cfg.Wait && q.cq == nil {
		rc := C.ofi_cq_open(d.domain, C.size_t(cfg.Size), 1, &q.cq)
		q.canWait = rc == 0
		if rc != 0 {
			q.noWait = callErr("fi_cq_open with FI_WAIT_UNSPEC", rc).Error()
		}
	}
	if q.cq == nil {
		if rc := C.ofi_cq_open(d.domain, C.size_t(cfg.Size), 0, &q.cq); rc != 0 {
			return nil, fmt.Errorf("open completion queue on domain %q: %w", d.about.Domain, callErr("fi_cq_open", rc))
		}
	}
	live.cqs.Add(1)
	d.mu.Lock()
	d.cqs[q] = struct{}{}
	d.mu.Unlock()
	return q, nil
}

// WaitFD is the file descriptor of a CQ opened with CQConfig.WaitFD (fi_control
// FI_GETWAIT): it polls readable when the CQ may have completions. Call TryWait before
// blocking on it. ok is false for a CQ without one.
func (q *CQ) WaitFD() (fd int, ok bool) {
	if q == nil || q.cq == nil || q.fd < 0 || !q.canWait {
		return -1, false
	}
	return q.fd, true
}

// TryWait runs fi_trywait over cqs (at most 64, all of this domain, opened with WaitFD):
// nil when the caller may block on their wait fds, an error matching ErrAgain when it
// must read them first.
func (d *Domain) TryWait(cqs []*CQ) error {
	if err := d.check(); err != nil {
		return err
	}
	if len(cqs) == 0 || len(cqs) > 64 {
		return fmt.Errorf("fi_trywait over %d completion queues: want 1..64", len(cqs))
	}
	ptrs := cqLists.Get().(*[64]*C.struct_fid_cq)
	defer cqLists.Put(ptrs)
	for i, q := range cqs {
		if q == nil || q.cq == nil {
			return fmt.Errorf("fi_trywait: completion queue %d: %w", i, ErrClosed)
		}
		ptrs[i] = q.cq
	}
	crossings.Add(1)
	if rc := C.ofi_trywait(d.fabric, &ptrs[0], C.int(len(cqs))); rc != 0 {
		return callErr("fi_trywait", rc)
	}
	return nil
}

// CanWait reports whether ReadWait can sleep; when not, why (the provider's refusal, or
// that no wait object was asked for).
func (q *CQ) CanWait() (bool, string) {
	if q.canWait {
		return true, ""
	}
	if q.noWait == "" {
		return false, "opened without a wait object"
	}
	return false, q.noWait
}

const readChunk = 64 // entries per cgo call (ofi_cq_read's stack array)

// The data path's buffers handed to C are Go memory (holding no Go pointers)
// reused through pools: an array passed to C escapes to the heap, and one
// allocated per call was 2 KiB for every completion-queue read.
var (
	cqeBufs = sync.Pool{New: func() any { return new([readChunk]C.struct_ofi_cqe) }}
	opBufs  = sync.Pool{New: func() any { return new([]C.struct_ofi_op) }}
	cqLists = sync.Pool{New: func() any { return new([64]*C.struct_fid_cq) }}
)

// Read fills out with ready completions without blocking (fi_cq_read). An error entry
// (fi_cq_readerr) is returned as a completion whose Err is a *CompletionError.
func (q *CQ) Read(out []Completion) (int, error) { return q.read(out, -1) }

// ReadWait is Read, but sleeps up to timeout on the CQ's wait object (fi_cq_sread) when
// nothing is ready; 0 completions and no error when the timeout passes. ErrNoWait when the
// CQ has no wait object.
func (q *CQ) ReadWait(out []Completion, timeout time.Duration) (int, error) {
	if !q.canWait {
		return 0, ErrNoWait
	}
	return q.read(out, max(int(timeout.Milliseconds()), 0))
}

func (q *CQ) read(out []Completion, timeout int) (int, error) {
	if q == nil || q.cq == nil {
		return 0, ErrClosed
	}
	if len(out) == 0 {
		return 0, nil
	}
	buf := cqeBufs.Get().(*[readChunk]C.struct_ofi_cqe)
	defer cqeBufs.Put(buf)
	crossings.Add(1)
	n := C.ofi_cq_read(q.cq, &buf[0], C.size_t(min(len(out), readChunk)), C.int(timeout))
	switch {
	case n > 0:
		for i := range int(n) {
			out[i] = completionOf(buf[i])
		}
		return int(n), nil
	case n == -C.FI_EAGAIN:
		return 0, nil
	case n == -C.FI_EAVAIL:
		return q.readErr(out)
	}
	call := "fi_cq_read"
	if timeout >= 0 {
		call = "fi_cq_sread"
	}
	return 0, fmt.Errorf("read completion queue: %w", callErr(call, C.int(n)))
}

func completionOf(e C.struct_ofi_cqe) Completion {
	c := Completion{ID: uint64(e.ctx), Flags: Caps(e.flags), Len: uint64(e.len)}
	if uint64(e.flags)&flagRemoteCQData != 0 {
		c.Data, c.HasData = uint64(e.data), true
	}
	return c
}

func (q *CQ) readErr(out []Completion) (int, error) {
	var e C.struct_ofi_cqe
	var errno, provErrno C.int
	var text [256]C.char
	crossings.Add(1)
	rc := C.ofi_cq_readerr(q.cq, &e, &errno, &provErrno, &text[0], C.size_t(len(text)))
	if rc == -C.FI_EAGAIN {
		return 0, nil
	}
	if rc < 0 {
		return 0, fmt.Errorf("read completion queue error entry: %w", callErr("fi_cq_readerr", C.int(rc)))
	}
	c := completionOf(e)
	c.Err = &CompletionError{ID: c.ID, Flags: c.Flags, Errno: int(errno), ProvErrno: int(provErrno), Text: C.GoString(&text[0])}
	out[0] = c
	return 1, nil
}

// Close closes the completion queue; close the endpoints bound to it first. Idempotent.
func (q *CQ) Close() error {
	if q == nil || q.cq == nil {
		return nil
	}
	err := closeFid(C.ofi_fid_cq(q.cq), "completion queue", &live.cqs)
	q.cq = nil
	forget(q.d, q.d.cqs, q)
	return err
}

// MR is a registered memory region.
type MR struct {
	d      *Domain
	mr     *C.struct_fid_mr
	desc   unsafe.Pointer // fi_mr_desc: C memory of the provider's
	addr   uintptr
	length int
	key    uint64
}

// RegisterMR registers length bytes at addr (memory outside the Go heap) with access bits
// (CapSend, CapRecv, CapWrite, CapRemoteWrite, ...). Under MRProvKey the provider chooses
// the key; otherwise the domain hands out keys 1, 2, ... in turn.
func (d *Domain) RegisterMR(addr uintptr, length int, access Caps) (*MR, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if length <= 0 {
		return nil, fmt.Errorf("register memory region at %#x: length %d must be positive", addr, length)
	}
	d.mu.Lock()
	key, used := requestKey(d.about.MRMode, d.nextKey)
	if used {
		d.nextKey++
	}
	d.mu.Unlock()
	m := &MR{d: d, addr: addr, length: length}
	if rc := C.ofi_mr_reg(d.domain, C.uintptr_t(addr), C.size_t(length), C.uint64_t(access), C.uint64_t(key), &m.mr); rc != 0 {
		return nil, fmt.Errorf("register %d bytes at %#x with access %v: %w", length, addr, access, callErr("fi_mr_reg", rc))
	}
	live.mrs.Add(1)
	m.key = uint64(C.ofi_mr_key(m.mr))
	m.desc = C.ofi_mr_desc(m.mr)
	d.mu.Lock()
	d.mrs[m] = struct{}{}
	d.mu.Unlock()
	return m, nil
}

// Key is the region's remote key (fi_mr_key).
func (m *MR) Key() uint64 { return m.key }

// Addr and Len are the registered memory.
func (m *MR) Addr() uintptr { return m.addr }

// Len is the registered length.
func (m *MR) Len() int { return m.length }

// RemoteAddr is the RMA address a peer writes to for byte off of the region: the virtual
// address under MRVirtAddr, else the offset.
func (m *MR) RemoteAddr(off uint64) uint64 { return rmaAddr(m.d.about.MRMode, m.addr, off) }

// Local is n bytes at byte off of the region, for a post.
func (m *MR) Local(off uint64, n int) Local {
	return Local{Addr: m.addr + uintptr(off), Len: n, MR: m}
}

// Close deregisters the region. Idempotent.
func (m *MR) Close() error {
	if m == nil || m.mr == nil {
		return nil
	}
	err := closeFid(C.ofi_fid_mr(m.mr), "memory region", &live.mrs)
	m.mr, m.desc = nil, nil
	forget(m.d, m.d.mrs, m)
	return err
}

// Endpoint is an enabled FI_EP_RDM endpoint bound to an AV and its CQs.
type Endpoint struct {
	d         *Domain
	ep        *C.struct_fid_ep
	selective bool
}

// OpenEndpoint opens an endpoint, binds cfg's address vector and completion queues
// (transmit and receive) and enables it.
func (d *Domain) OpenEndpoint(cfg EndpointConfig) (*Endpoint, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if cfg.AV == nil || cfg.TxCQ == nil || cfg.RxCQ == nil {
		return nil, errors.New("open endpoint: an address vector and transmit and receive completion queues are required")
	}
	e := &Endpoint{d: d, selective: cfg.SelectiveCompletion}
	if rc := C.ofi_endpoint(d.domain, d.info, &e.ep); rc != 0 {
		return nil, fmt.Errorf("open endpoint on domain %q: %w", d.about.Domain, callErr("fi_endpoint", rc))
	}
	live.eps.Add(1)
	d.mu.Lock()
	d.eps[e] = struct{}{}
	d.mu.Unlock()
	if err := e.bindAndEnable(cfg); err != nil {
		_ = e.Close()
		return nil, err
	}
	return e, nil
}

func (e *Endpoint) bindAndEnable(cfg EndpointConfig) error {
	if cfg.AV.av == nil || cfg.TxCQ.cq == nil || cfg.RxCQ.cq == nil {
		return fmt.Errorf("open endpoint: %w (its address vector or a completion queue)", ErrClosed)
	}
	tx := C.uint64_t(C.FI_TRANSMIT)
	if cfg.SelectiveCompletion {
		tx |= C.FI_SELECTIVE_COMPLETION
	}
	binds := []struct {
		fid   *C.struct_fid
		flags C.uint64_t
		what  string
	}{
		{C.ofi_fid_av(cfg.AV.av), 0, "address vector"},
		{C.ofi_fid_cq(cfg.TxCQ.cq), tx, "transmit completion queue"},
		{C.ofi_fid_cq(cfg.RxCQ.cq), C.FI_RECV, "receive completion queue"},
	}
	for _, b := range binds {
		if rc := C.ofi_ep_bind(e.ep, b.fid, b.flags); rc != 0 {
			return fmt.Errorf("bind the endpoint's %s: %w", b.what, callErr("fi_ep_bind", rc))
		}
	}
	if rc := C.ofi_enable(e.ep); rc != 0 {
		return fmt.Errorf("enable endpoint: %w", callErr("fi_enable", rc))
	}
	return nil
}

// Name is the endpoint's address (fi_getname) for a peer's AV.Insert: an IP and port for
// tcp, 32 bytes on EFA.
func (e *Endpoint) Name() ([]byte, error) {
	if e == nil || e.ep == nil {
		return nil, ErrClosed
	}
	size := C.size_t(64)
	for range 2 {
		buf := C.malloc(size)
		n := size
		rc := C.ofi_getname(e.ep, buf, &n)
		if rc == 0 {
			out := C.GoBytes(buf, C.int(n))
			C.free(buf)
			return out, nil
		}
		C.free(buf)
		if rc != -C.FI_ETOOSMALL {
			return nil, fmt.Errorf("endpoint name: %w", callErr("fi_getname", rc))
		}
		size = n
	}
	return nil, errors.New("endpoint name: fi_getname kept asking for a larger buffer")
}

func (e *Endpoint) local(call string, l Local) (unsafe.Pointer, error) {
	if e == nil || e.ep == nil {
		return nil, fmt.Errorf("%s: %w", call, ErrClosed)
	}
	if l.MR == nil {
		if f := localFault(e.d.about.MRMode, false, l.Addr, l.Len, 0, 0); f != "" {
			return nil, fmt.Errorf("%s: %s", call, f)
		}
		return nil, nil
	}
	if l.MR.mr == nil {
		return nil, fmt.Errorf("%s: local memory region: %w", call, ErrClosed)
	}
	if f := localFault(e.d.about.MRMode, true, l.Addr, l.Len, l.MR.addr, l.MR.length); f != "" {
		return nil, fmt.Errorf("%s: %s", call, f)
	}
	return l.MR.desc, nil
}

func postErr(call string, rc C.ssize_t) error {
	if rc == 0 {
		return nil
	}
	return callErr(call, C.int(rc))
}

// Send posts fi_send of l to dest; its completion carries id.
func (e *Endpoint) Send(l Local, dest Addr, id uint64) error {
	desc, err := e.local("fi_send", l)
	if err != nil {
		return err
	}
	return postErr("fi_send", C.ofi_send(e.ep, C.uintptr_t(l.Addr), C.size_t(l.Len), desc, C.uint64_t(dest), C.uint64_t(id)))
}

// SendData posts fi_senddata: a send carrying remote CQ data.
func (e *Endpoint) SendData(l Local, data uint64, dest Addr, id uint64) error {
	desc, err := e.local("fi_senddata", l)
	if err != nil {
		return err
	}
	return postErr("fi_senddata", C.ofi_senddata(e.ep, C.uintptr_t(l.Addr), C.size_t(l.Len), desc, C.uint64_t(data),
		C.uint64_t(dest), C.uint64_t(id)))
}

// Recv posts fi_recv into l from any peer; its completion carries id.
func (e *Endpoint) Recv(l Local, id uint64) error {
	desc, err := e.local("fi_recv", l)
	if err != nil {
		return err
	}
	return postErr("fi_recv", C.ofi_recv(e.ep, C.uintptr_t(l.Addr), C.size_t(l.Len), desc, C.uint64_t(AddrUnspec), C.uint64_t(id)))
}

// Write posts fi_write of l into dest's memory at r: no completion at the target.
func (e *Endpoint) Write(l Local, dest Addr, r Remote, id uint64) error {
	desc, err := e.local("fi_write", l)
	if err != nil {
		return err
	}
	return postErr("fi_write", C.ofi_write(e.ep, C.uintptr_t(l.Addr), C.size_t(l.Len), desc, C.uint64_t(dest),
		C.uint64_t(r.Addr), C.uint64_t(r.Key), C.uint64_t(id)))
}

// WriteData posts fi_writedata of l into dest's memory at r with remote CQ data: the
// target's receive CQ reports a completion carrying data (consuming a posted receive where
// the domain's mode has FI_RX_CQ_DATA).
func (e *Endpoint) WriteData(l Local, data uint64, dest Addr, r Remote, id uint64) error {
	desc, err := e.local("fi_writedata", l)
	if err != nil {
		return err
	}
	return postErr("fi_writedata", C.ofi_writedata(e.ep, C.uintptr_t(l.Addr), C.size_t(l.Len), desc, C.uint64_t(data),
		C.uint64_t(dest), C.uint64_t(r.Addr), C.uint64_t(r.Key), C.uint64_t(id)))
}

var opCalls = [...]string{OpSend: "fi_sendmsg", OpRecv: "fi_recvmsg", OpWrite: "fi_writemsg"}

// Post posts ops in order in one cgo call (fi_sendmsg, fi_recvmsg, fi_writemsg) and
// returns how many were posted; the error names the first that was not (ErrAgain: read
// completions and post the rest). Transmit operations complete at the endpoint's transmit
// CQ when Signaled or when the endpoint has no SelectiveCompletion; receives always do.
func (e *Endpoint) Post(ops []Op) (int, error) {
	if e == nil || e.ep == nil {
		return 0, fmt.Errorf("post %d operations: %w", len(ops), ErrClosed)
	}
	if len(ops) == 0 {
		return 0, nil
	}
	pooled := opBufs.Get().(*[]C.struct_ofi_op)
	defer opBufs.Put(pooled)
	if cap(*pooled) < len(ops) {
		*pooled = make([]C.struct_ofi_op, len(ops))
	}
	cops := (*pooled)[:len(ops)]
	for i, o := range ops {
		var err error
		if cops[i], err = e.cOp(o); err != nil {
			return 0, fmt.Errorf("post operation %d: %w", i, err)
		}
	}
	var rc C.ssize_t
	crossings.Add(1)
	n := int(C.ofi_post(e.ep, &cops[0], C.size_t(len(cops)), &rc))
	if rc != 0 {
		return n, fmt.Errorf("post operation %d of %d (id %d): %w", n, len(ops), ops[n].ID, callErr(opCalls[ops[n].Kind], C.int(rc)))
	}
	return n, nil
}

// cOp is o as ofi_post takes it.
func (e *Endpoint) cOp(o Op) (C.struct_ofi_op, error) {
	if int(o.Kind) >= len(opCalls) {
		return C.struct_ofi_op{}, fmt.Errorf("unknown kind %d", o.Kind)
	}
	desc, err := e.local(opCalls[o.Kind], o.Local)
	if err != nil {
		return C.struct_ofi_op{}, err
	}
	return C.struct_ofi_op{addr: C.uint64_t(o.Local.Addr), len: C.uint64_t(o.Local.Len), peer: C.uint64_t(o.Peer),
		raddr: C.uint64_t(o.Remote.Addr), key: C.uint64_t(o.Remote.Key), data: C.uint64_t(o.Data),
		id: C.uint64_t(o.ID), flags: C.uint64_t(e.postFlags(o)), desc: desc, kind: C.int(o.Kind)}, nil
}

// postFlags are one operation's fi_*msg flags: these replace the endpoint's defaults, so
// the domain's completion semantics are repeated here.
func (e *Endpoint) postFlags(o Op) uint64 {
	if o.Kind == OpRecv {
		return C.FI_COMPLETION
	}
	f := e.d.txOps
	if o.Signaled || !e.selective {
		f |= C.FI_COMPLETION
	}
	if o.HasData {
		f |= flagRemoteCQData
	}
	return f
}

// Close closes the endpoint. Idempotent.
func (e *Endpoint) Close() error {
	if e == nil || e.ep == nil {
		return nil
	}
	err := closeFid(C.ofi_fid_ep(e.ep), "endpoint", &live.eps)
	e.ep = nil
	forget(e.d, e.d.eps, e)
	return err
}

// The exported constants mirror libfabric's; the build fails when one differs.
const (
	_ uint64 = 0 - (uint64(C.FI_MSG) ^ uint64(CapMsg))
	_ uint64 = 0 - (uint64(C.FI_RMA) ^ uint64(CapRMA))
	_ uint64 = 0 - (uint64(C.FI_TAGGED) ^ uint64(CapTagged))
	_ uint64 = 0 - (uint64(C.FI_ATOMIC) ^ uint64(CapAtomic))
	_ uint64 = 0 - (uint64(C.FI_READ) ^ uint64(CapRead))
	_ uint64 = 0 - (uint64(C.FI_WRITE) ^ uint64(CapWrite))
	_ uint64 = 0 - (uint64(C.FI_RECV) ^ uint64(CapRecv))
	_ uint64 = 0 - (uint64(C.FI_SEND) ^ uint64(CapSend))
	_ uint64 = 0 - (uint64(C.FI_REMOTE_READ) ^ uint64(CapRemoteRead))
	_ uint64 = 0 - (uint64(C.FI_REMOTE_WRITE) ^ uint64(CapRemoteWrite))
	_ uint64 = 0 - (uint64(C.FI_MULTI_RECV) ^ uint64(CapMultiRecv))
	_ uint64 = 0 - (uint64(C.FI_REMOTE_CQ_DATA) ^ uint64(flagRemoteCQData))
	_ uint64 = 0 - (uint64(C.FI_LOCAL_COMM) ^ uint64(CapLocalComm))
	_ uint64 = 0 - (uint64(C.FI_REMOTE_COMM) ^ uint64(CapRemoteComm))
	_ uint64 = 0 - (uint64(C.FI_RMA_EVENT) ^ uint64(CapRMAEvent))
	_ uint64 = 0 - (uint64(C.FI_SOURCE) ^ uint64(CapSource))
	_ uint64 = 0 - (uint64(C.FI_BUFFERED_RECV) ^ uint64(ModeBufferedRecv))
	_ uint64 = 0 - (uint64(C.FI_CONTEXT2) ^ uint64(ModeContext2))
	_ uint64 = 0 - (uint64(C.FI_LOCAL_MR) ^ uint64(ModeLocalMR))
	_ uint64 = 0 - (uint64(C.FI_RX_CQ_DATA) ^ uint64(ModeRxCQData))
	_ uint64 = 0 - (uint64(C.FI_ASYNC_IOV) ^ uint64(ModeAsyncIOV))
	_ uint64 = 0 - (uint64(C.FI_MSG_PREFIX) ^ uint64(ModeMsgPrefix))
	_ uint64 = 0 - (uint64(C.FI_CONTEXT) ^ uint64(ModeContext))
	_ uint64 = 0 - (uint64(C.FI_MR_LOCAL) ^ uint64(MRLocal))
	_ uint64 = 0 - (uint64(C.FI_MR_RAW) ^ uint64(MRRaw))
	_ uint64 = 0 - (uint64(C.FI_MR_VIRT_ADDR) ^ uint64(MRVirtAddr))
	_ uint64 = 0 - (uint64(C.FI_MR_ALLOCATED) ^ uint64(MRAllocated))
	_ uint64 = 0 - (uint64(C.FI_MR_PROV_KEY) ^ uint64(MRProvKey))
	_ uint64 = 0 - (uint64(C.FI_MR_MMU_NOTIFY) ^ uint64(MRMMUNotify))
	_ uint64 = 0 - (uint64(C.FI_MR_RMA_EVENT) ^ uint64(MRRMAEvent))
	_ uint64 = 0 - (uint64(C.FI_MR_ENDPOINT) ^ uint64(MREndpoint))
	_ uint64 = 0 - (uint64(C.FI_MR_HMEM) ^ uint64(MRHMem))
	_ uint64 = 0 - (uint64(C.FI_ORDER_WAW) ^ uint64(OrderWAW))
	_ uint64 = 0 - (uint64(C.FI_ORDER_WAS) ^ uint64(OrderWAS))
	_ uint64 = 0 - (uint64(C.FI_ORDER_SAW) ^ uint64(OrderSAW))
	_ uint64 = 0 - (uint64(C.FI_ORDER_SAS) ^ uint64(OrderSAS))
	_ uint64 = 0 - (uint64(C.FI_PROGRESS_AUTO) ^ uint64(ProgressAuto))
	_ uint64 = 0 - (uint64(C.FI_PROGRESS_MANUAL) ^ uint64(ProgressManual))
	_ uint64 = 0 - (uint64(C.FI_THREAD_SAFE) ^ uint64(ThreadSafe))
	_ uint64 = 0 - (uint64(C.FI_THREAD_FID) ^ uint64(ThreadFID))
	_ uint64 = 0 - (uint64(C.FI_THREAD_DOMAIN) ^ uint64(ThreadDomain))
	_ uint64 = 0 - (uint64(C.FI_THREAD_COMPLETION) ^ uint64(ThreadCompletion))
	_ uint64 = 0 - (uint64(C.FI_THREAD_ENDPOINT) ^ uint64(ThreadEndpoint))
	_ uint64 = 0 - (uint64(C.FI_EAGAIN) ^ eagain)
	_ uint64 = 0 - (uint64(C.FI_ADDR_UNSPEC) ^ uint64(AddrUnspec))
)
