//go:build !linux || !cgo

package ofi

import (
	"context"
	"time"
)

// This is the pure-Go twin of ofi_cgo.go: the same API, and every call that would touch
// libfabric returns ErrNotSupported.

// Discover runs fi_getinfo with h.
func Discover(Hints) ([]Info, error) { return nil, ErrNotSupported }

// Domain is an opened fabric and domain.
type Domain struct{}

// Open opens the first fabric and domain fi_getinfo offers for h.
func Open(Hints) (*Domain, error) { return nil, ErrNotSupported }

// Info is what the opened domain offers.
func (d *Domain) Info() Info { return Info{} }

// Close closes the domain and everything created on it. Idempotent.
func (d *Domain) Close() error { return nil }

// AV is an address vector.
type AV struct{}

// OpenAV opens an address vector.
func (d *Domain) OpenAV(int) (*AV, error) { return nil, ErrNotSupported }

// Insert adds a peer's endpoint name.
func (a *AV) Insert([]byte) (Addr, error) { return 0, ErrNotSupported }

// Close closes the address vector. Idempotent.
func (a *AV) Close() error { return nil }

// CQ is a completion queue.
type CQ struct{}

// OpenCQ opens a completion queue.
func (d *Domain) OpenCQ(CQConfig) (*CQ, error) { return nil, ErrNotSupported }

// CanWait reports whether ReadWait can sleep.
func (q *CQ) CanWait() (bool, string) { return false, ErrNotSupported.Error() }

// Read fills out with ready completions.
func (q *CQ) Read([]Completion) (int, error) { return 0, ErrNotSupported }

// ReadWait is Read with a wait.
func (q *CQ) ReadWait([]Completion, time.Duration) (int, error) { return 0, ErrNotSupported }

// Close closes the completion queue. Idempotent.
func (q *CQ) Close() error { return nil }

// WaitFD has no file descriptor here.
func (q *CQ) WaitFD() (int, bool) { return -1, false }

// TryWait returns ErrNotSupported.
func (d *Domain) TryWait([]*CQ) error { return ErrNotSupported }

// MR is a registered memory region.
type MR struct{}

// RegisterMR registers memory.
func (d *Domain) RegisterMR(uintptr, int, Caps) (*MR, error) { return nil, ErrNotSupported }

// Key is the region's remote key.
func (m *MR) Key() uint64 { return 0 }

// Addr is the registered memory's address.
func (m *MR) Addr() uintptr { return 0 }

// Len is the registered length.
func (m *MR) Len() int { return 0 }

// RemoteAddr is the RMA address of byte off.
func (m *MR) RemoteAddr(uint64) uint64 { return 0 }

// Local is n bytes at byte off of the region.
func (m *MR) Local(uint64, int) Local { return Local{} }

// Close deregisters the region. Idempotent.
func (m *MR) Close() error { return nil }

// Endpoint is an FI_EP_RDM endpoint.
type Endpoint struct{}

// OpenEndpoint opens an endpoint.
func (d *Domain) OpenEndpoint(EndpointConfig) (*Endpoint, error) { return nil, ErrNotSupported }

// Name is the endpoint's address.
func (e *Endpoint) Name() ([]byte, error) { return nil, ErrNotSupported }

// Send posts fi_send.
func (e *Endpoint) Send(Local, Addr, uint64) error { return ErrNotSupported }

// SendData posts fi_senddata.
func (e *Endpoint) SendData(Local, uint64, Addr, uint64) error { return ErrNotSupported }

// Recv posts fi_recv.
func (e *Endpoint) Recv(Local, uint64) error { return ErrNotSupported }

// Write posts fi_write.
func (e *Endpoint) Write(Local, Addr, Remote, uint64) error { return ErrNotSupported }

// WriteData posts fi_writedata.
func (e *Endpoint) WriteData(Local, uint64, Addr, Remote, uint64) error { return ErrNotSupported }

// Post posts operations in order.
func (e *Endpoint) Post([]Op) (int, error) { return 0, ErrNotSupported }

// Close closes the endpoint. Idempotent.
func (e *Endpoint) Close() error { return nil }

// LaneSet is posting and completion-reading threads.
type LaneSet struct{}

// StartLanes starts lanes.
func (d *Domain) StartLanes([]LaneConfig, int) (*LaneSet, error) { return nil, ErrNotSupported }

// Lanes is the number of lanes.
func (s *LaneSet) Lanes() int { return 0 }

// Post hands operations to a lane.
func (s *LaneSet) Post(int, int, int, int, []Op) error { return ErrNotSupported }

// Take moves a lane's completions out.
func (s *LaneSet) Take(int, []LaneCompletion) (int, bool, error) { return 0, false, ErrNotSupported }

// Wait sleeps until a lane may have completions.
func (s *LaneSet) Wait(context.Context) error { return ErrNotSupported }

// Stop stops the threads.
func (s *LaneSet) Stop() []LaneFailure { return nil }

// Close frees the set. Idempotent.
func (s *LaneSet) Close() {}
