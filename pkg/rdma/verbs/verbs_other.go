//go:build !linux || !cgo

package verbs

import (
	"context"
	"net"
)

// This is the pure-Go twin of verbs_cgo.go: the same API, and every call that would touch
// libibverbs returns ErrNotSupported.

// DeviceNames lists the RDMA devices libibverbs sees.
func DeviceNames() ([]string, error) { return nil, ErrNotSupported }

// Context is an opened RDMA device.
type Context struct{}

// Open opens the RDMA device with the given name.
func Open(string) (*Context, error) { return nil, ErrNotSupported }

// Name returns the device name.
func (c *Context) Name() string { return "" }

// Attr returns the device attributes queried at Open.
func (c *Context) Attr() DeviceAttr { return DeviceAttr{} }

// QueryDevice queries the device attributes.
func (c *Context) QueryDevice() (DeviceAttr, error) { return DeviceAttr{}, ErrNotSupported }

// QueryPort queries a port's attributes.
func (c *Context) QueryPort(int) (PortAttr, error) { return PortAttr{}, ErrNotSupported }

// QueryGID reads one GID table entry.
func (c *Context) QueryGID(int, int) (net.IP, error) { return nil, ErrNotSupported }

// GIDTable returns the valid GID entries of one port.
func (c *Context) GIDTable(int) ([]GIDEntry, error) { return nil, ErrNotSupported }

func (c *Context) gidTable(int, bool) ([]GIDEntry, error) { return nil, ErrNotSupported }

// AllocPD allocates a protection domain.
func (c *Context) AllocPD() (*PD, error) { return nil, ErrNotSupported }

// CreateCQ creates a completion queue.
func (c *Context) CreateCQ(CQConfig) (*CQ, error) { return nil, ErrNotSupported }

// Close closes the device and everything created on it. Idempotent.
func (c *Context) Close() error { return nil }

// PD is a protection domain.
type PD struct{}

// Context returns the device the PD belongs to.
func (pd *PD) Context() *Context { return nil }

// RegisterMR registers buf.
func (pd *PD) RegisterMR([]byte, Access) (*MR, error) { return nil, ErrNotSupported }

// RegisterMRAddr registers length bytes at addr.
func (pd *PD) RegisterMRAddr(uintptr, int, Access) (*MR, error) { return nil, ErrNotSupported }

// CreateQP creates an RC queue pair.
func (pd *PD) CreateQP(QPConfig) (*QP, error) { return nil, ErrNotSupported }

// Close closes the PD. Idempotent.
func (pd *PD) Close() error { return nil }

// MR is a registered memory region.
type MR struct{}

// Addr returns the registered start address.
func (mr *MR) Addr() uintptr { return 0 }

// Len returns the registered length in bytes.
func (mr *MR) Len() int { return 0 }

// LKey returns the local key.
func (mr *MR) LKey() uint32 { return 0 }

// RKey returns the remote key.
func (mr *MR) RKey() uint32 { return 0 }

// Close deregisters the MR. Idempotent.
func (mr *MR) Close() error { return nil }

// CQ is a completion queue.
type CQ struct{}

// Entries returns the CQ's actual size.
func (cq *CQ) Entries() int { return 0 }

// Poll polls completions.
func (cq *CQ) Poll([]WorkCompletion) (int, error) { return 0, ErrNotSupported }

// Arm requests a completion event.
func (cq *CQ) Arm() error { return ErrNotSupported }

// WaitEvent waits for the completion event requested by Arm.
func (cq *CQ) WaitEvent(context.Context) error { return ErrNotSupported }

// EachEvent calls fn after each completion event requested by Arm.
func (cq *CQ) EachEvent(context.Context, func()) error { return ErrNotSupported }

// PollWait polls, sleeping while the CQ is empty.
func (cq *CQ) PollWait(context.Context, []WorkCompletion) (int, error) { return 0, ErrNotSupported }

// Close destroys the CQ. Idempotent.
func (cq *CQ) Close() error { return nil }

// QP is an RC queue pair.
type QP struct{}

// QPN returns the queue pair number.
func (qp *QP) QPN() uint32 { return 0 }

// Caps returns the actual capacities.
func (qp *QP) Caps() QPCaps { return QPCaps{} }

// Clamped says which requested sizes were lowered to the device's limits.
func (qp *QP) Clamped() string { return "" }

// ToInit moves the QP to INIT.
func (qp *QP) ToInit(int, Access) error { return ErrNotSupported }

// ToRTR moves the QP to RTR.
func (qp *QP) ToRTR(RTRConfig) error { return ErrNotSupported }

// ToRTS moves the QP to RTS.
func (qp *QP) ToRTS(RTSConfig) error { return ErrNotSupported }

// ToError moves the QP to ERR.
func (qp *QP) ToError() error { return ErrNotSupported }

// State queries the QP's current state.
func (qp *QP) State() (QPState, error) { return 0, ErrNotSupported }

// PostSend posts send work requests.
func (qp *QP) PostSend([]SendWR) error { return ErrNotSupported }

// PostRecv posts receive work requests.
func (qp *QP) PostRecv([]RecvWR) error { return ErrNotSupported }

// Close destroys the QP. Idempotent.
func (qp *QP) Close() error { return nil }

// Mmap returns memory outside the Go heap for RegisterMR.
func Mmap(int) ([]byte, error) { return nil, ErrNotSupported }

// Munmap releases memory from Mmap.
func Munmap([]byte) error { return ErrNotSupported }

// PostThread is an OS thread that posts send work requests handed to it.
type PostThread struct{}

// StartPostThread starts a posting thread pinned to cpu.
func StartPostThread(int, int) (*PostThread, error) { return nil, ErrNotSupported }

// Post hands wrs to the thread as one batch.
func (p *PostThread) Post(*QP, int, []SendWR) error { return ErrNotSupported }

// Failed is closed when a post failed.
func (p *PostThread) Failed() <-chan struct{} { return nil }

// Close stops the thread and returns the batches it did not post.
func (p *PostThread) Close() []PostFailure { return nil }
