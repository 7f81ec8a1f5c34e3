package ofi

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
)

// ErrNotSupported is returned by every call of the pure-Go twin (no cgo or not Linux).
var ErrNotSupported = errors.New("libfabric not supported in this build (needs linux and cgo with libfabric)")

// ErrClosed is returned by operations on a closed object.
var ErrClosed = errors.New("libfabric object already closed")

// ErrAgain matches a post the provider could not take now (FI_EAGAIN): read completions
// and post again.
var ErrAgain = errors.New("libfabric resource temporarily unavailable (FI_EAGAIN)")

// ErrNoWait is returned by CQ.ReadWait on a completion queue without a wait object.
var ErrNoWait = errors.New("completion queue has no wait object: poll it with Read")

const eagain = 11 // FI_EAGAIN (EAGAIN)

// CallError is a libfabric call that failed: the call, its errno (positive) and
// fi_strerror's text.
type CallError struct {
	Call  string
	Errno int
	Text  string
}

func (e *CallError) Error() string { return fmt.Sprintf("%s: %s (errno %d)", e.Call, e.Text, e.Errno) }

// Is makes a CallError with FI_EAGAIN match ErrAgain.
func (e *CallError) Is(target error) bool { return target == ErrAgain && e.Errno == eagain }

// Caps are capability bits (fi_info caps) and, for memory regions, access bits.
type Caps uint64

// Capability and access bits, with libfabric's values.
const (
	CapMsg           Caps = 1 << 1
	CapRMA           Caps = 1 << 2
	CapTagged        Caps = 1 << 3
	CapAtomic        Caps = 1 << 4
	CapRead          Caps = 1 << 8
	CapWrite         Caps = 1 << 9
	CapRecv          Caps = 1 << 10
	CapSend          Caps = 1 << 11
	CapRemoteRead    Caps = 1 << 12
	CapRemoteWrite   Caps = 1 << 13
	CapMultiRecv     Caps = 1 << 16
	CapLocalComm     Caps = 1 << 51
	CapRemoteComm    Caps = 1 << 52
	CapRMAEvent      Caps = 1 << 56
	CapSource        Caps = 1 << 57
	flagRemoteCQData      = 1 << 17 // completion flag FI_REMOTE_CQ_DATA
)

var capNames = []bitName{
	{uint64(CapMsg), "FI_MSG"}, {uint64(CapRMA), "FI_RMA"}, {uint64(CapTagged), "FI_TAGGED"},
	{uint64(CapAtomic), "FI_ATOMIC"}, {uint64(CapRead), "FI_READ"}, {uint64(CapWrite), "FI_WRITE"},
	{uint64(CapRecv), "FI_RECV"}, {uint64(CapSend), "FI_SEND"}, {uint64(CapRemoteRead), "FI_REMOTE_READ"},
	{uint64(CapRemoteWrite), "FI_REMOTE_WRITE"}, {uint64(CapMultiRecv), "FI_MULTI_RECV"},
	{flagRemoteCQData, "FI_REMOTE_CQ_DATA"}, {uint64(CapLocalComm), "FI_LOCAL_COMM"},
	{uint64(CapRemoteComm), "FI_REMOTE_COMM"}, {uint64(CapRMAEvent), "FI_RMA_EVENT"},
	{uint64(CapSource), "FI_SOURCE"},
}

func (c Caps) String() string { return bitString(uint64(c), capNames) }

// Mode bits (fi_info mode): what a provider asks of the application.
type Mode uint64

// Mode bits, with libfabric's values.
const (
	ModeBufferedRecv Mode = 1 << 51
	ModeContext2     Mode = 1 << 52
	ModeLocalMR      Mode = 1 << 55
	ModeRxCQData     Mode = 1 << 56 // remote CQ data consumes a posted receive
	ModeAsyncIOV     Mode = 1 << 57
	ModeMsgPrefix    Mode = 1 << 58
	ModeContext      Mode = 1 << 59
)

var modeNames = []bitName{
	{uint64(ModeBufferedRecv), "FI_BUFFERED_RECV"}, {uint64(ModeContext2), "FI_CONTEXT2"},
	{uint64(ModeLocalMR), "FI_LOCAL_MR"}, {uint64(ModeRxCQData), "FI_RX_CQ_DATA"},
	{uint64(ModeAsyncIOV), "FI_ASYNC_IOV"}, {uint64(ModeMsgPrefix), "FI_MSG_PREFIX"},
	{uint64(ModeContext), "FI_CONTEXT"},
}

func (m Mode) String() string { return bitString(uint64(m), modeNames) }

// MRMode bits (domain_attr mr_mode): how memory registration works on a domain.
type MRMode uint32

// MR mode bits, with libfabric's values.
const (
	MRLocal     MRMode = 1 << 2 // local buffers need a registration; pass the MR on posts
	MRRaw       MRMode = 1 << 3
	MRVirtAddr  MRMode = 1 << 4 // remote addresses are virtual addresses (else offsets)
	MRAllocated MRMode = 1 << 5 // registered memory must be backed by allocated pages
	MRProvKey   MRMode = 1 << 6 // the provider chooses keys
	MRMMUNotify MRMode = 1 << 7
	MRRMAEvent  MRMode = 1 << 8
	MREndpoint  MRMode = 1 << 9
	MRHMem      MRMode = 1 << 10
)

var mrModeNames = []bitName{
	{uint64(MRLocal), "FI_MR_LOCAL"}, {uint64(MRRaw), "FI_MR_RAW"}, {uint64(MRVirtAddr), "FI_MR_VIRT_ADDR"},
	{uint64(MRAllocated), "FI_MR_ALLOCATED"}, {uint64(MRProvKey), "FI_MR_PROV_KEY"},
	{uint64(MRMMUNotify), "FI_MR_MMU_NOTIFY"}, {uint64(MRRMAEvent), "FI_MR_RMA_EVENT"},
	{uint64(MREndpoint), "FI_MR_ENDPOINT"}, {uint64(MRHMem), "FI_MR_HMEM"},
}

func (m MRMode) String() string { return bitString(uint64(m), mrModeNames) }

// SupportedMRModes are the MR mode bits the binding honours: a provider asking for others
// (FI_MR_ENDPOINT, FI_MR_RAW, ...) is not offered by Discover or Open.
const SupportedMRModes = MRLocal | MRVirtAddr | MRAllocated | MRProvKey

// SupportedModes are the mode bits the binding honours (FI_RX_CQ_DATA: the caller posts
// receives for remote CQ data; the Info says whether it must).
const SupportedModes = ModeRxCQData

type bitName struct {
	bit  uint64
	name string
}

// bitString names the set bits, "[]" for none and hex for bits without a name.
func bitString(v uint64, names []bitName) string {
	var parts []string
	for _, n := range names {
		if v&n.bit != 0 {
			parts = append(parts, n.name)
			v &^= n.bit
		}
	}
	if v != 0 {
		parts = append(parts, fmt.Sprintf("%#x", v))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// Hints narrow provider discovery (fi_getinfo). Endpoints are always FI_EP_RDM.
type Hints struct {
	// Provider is a provider name such as "tcp;ofi_rxm", "verbs;ofi_rxm", "efa" or "shm"
	// ("": any).
	Provider string
	// Domain is a domain name such as "lo", "mlx5_0" or "rdmap0s6-rdm" ("": any).
	Domain string
	// Node and Service, with Source, give the local address to bind (e.g. "127.0.0.1" for
	// loopback only); without Source they name a peer (fi_getinfo node and service).
	Node, Service string
	Source        bool
	// Caps are the capabilities required (e.g. CapMsg|CapRMA|CapRemoteComm).
	Caps Caps
	// DeliveryComplete makes FI_DELIVERY_COMPLETE the endpoints' default completion
	// semantics: a send or write completes once the target has processed it, so a write
	// the target rejects (a bad key) completes with an error at the sender. Without it,
	// tcp;ofi_rxm and shm complete such a write successfully and the target drops it
	// without a completion (seen with libfabric 1.17).
	DeliveryComplete bool
	// MsgOrder is the message ordering the endpoints must keep, transmit and receive side
	// (tx_attr and rx_attr msg_order), e.g. OrderSAS for sends that match posted receives
	// in the order sent; a provider that cannot keep it is not offered.
	MsgOrder Order
}

// Order is a set of message-ordering bits (msg_order): operations of the second kind
// are processed after operations of the first kind posted before them on one endpoint.
type Order uint64

// Ordering bits, with libfabric's values (RMA read ordering is not used).
const (
	OrderWAW Order = 1 << 4 // write after write
	OrderWAS Order = 1 << 5 // write after send
	OrderSAW Order = 1 << 7 // send after write
	OrderSAS Order = 1 << 8 // send after send
)

var orderNames = []bitName{
	{1 << 0, "FI_ORDER_RAR"}, {1 << 1, "FI_ORDER_RAW"}, {1 << 2, "FI_ORDER_RAS"}, {1 << 3, "FI_ORDER_WAR"},
	{uint64(OrderWAW), "FI_ORDER_WAW"}, {uint64(OrderWAS), "FI_ORDER_WAS"}, {1 << 6, "FI_ORDER_SAR"},
	{uint64(OrderSAW), "FI_ORDER_SAW"}, {uint64(OrderSAS), "FI_ORDER_SAS"}, {1 << 16, "FI_ORDER_DATA"},
	{1 << 32, "FI_ORDER_RMA_RAR"}, {1 << 33, "FI_ORDER_RMA_RAW"}, {1 << 34, "FI_ORDER_RMA_WAR"},
	{1 << 35, "FI_ORDER_RMA_WAW"}, {1 << 36, "FI_ORDER_ATOMIC_RAR"}, {1 << 37, "FI_ORDER_ATOMIC_RAW"},
	{1 << 38, "FI_ORDER_ATOMIC_WAR"}, {1 << 39, "FI_ORDER_ATOMIC_WAW"},
}

func (o Order) String() string { return bitString(uint64(o), orderNames) }

// Progress is a data or control progress model (enum fi_progress).
type Progress int

// Progress models.
const (
	ProgressUnspec Progress = 0
	ProgressAuto   Progress = 1
	ProgressManual Progress = 2
)

func (p Progress) String() string {
	switch p {
	case ProgressAuto:
		return "auto"
	case ProgressManual:
		return "manual"
	}
	return "unspec"
}

// Threading is a domain's threading model (enum fi_threading): which calls
// the application must serialise.
type Threading int

// Threading models.
const (
	ThreadUnspec     Threading = 0
	ThreadSafe       Threading = 1 // nothing: every object may be used from any thread at once
	ThreadFID        Threading = 2 // calls on one object (endpoint, CQ, ...)
	ThreadDomain     Threading = 3 // every call on the domain and its objects
	ThreadCompletion Threading = 4 // calls on a CQ and the endpoints bound to it
	ThreadEndpoint   Threading = 5 // calls on an endpoint and its objects
)

var threadingNames = map[Threading]string{ThreadSafe: "FI_THREAD_SAFE", ThreadFID: "FI_THREAD_FID", ThreadDomain: "FI_THREAD_DOMAIN",
	ThreadCompletion: "FI_THREAD_COMPLETION", ThreadEndpoint: "FI_THREAD_ENDPOINT"}

func (t Threading) String() string {
	if s, ok := threadingNames[t]; ok {
		return s
	}
	return "FI_THREAD_UNSPEC"
}

// PerEndpoint reports whether endpoints that each have a completion queue
// and an address vector of their own may be used from different threads at
// once, each endpoint and its objects by one thread at a time: every model
// but FI_THREAD_DOMAIN (and an unspecified one).
func (t Threading) PerEndpoint() bool {
	return t == ThreadSafe || t == ThreadFID || t == ThreadEndpoint || t == ThreadCompletion
}

// Info is what one fi_getinfo answer offers.
type Info struct {
	Provider   string
	Fabric     string
	Domain     string
	Caps       Caps
	Mode       Mode
	MRMode     MRMode
	MaxMsgSize uint64
	CQDataSize int // bytes of remote CQ data (0: none)
	MRKeySize  int // bytes of a memory key
	InjectSize int
	TxSize     int
	RxSize     int
	// DataProgress is manual when completions are only progressed by reading the CQs.
	DataProgress Progress
	// Threading is which calls the application must serialise.
	Threading Threading
	// TxMsgOrder and RxMsgOrder are the message ordering the endpoints keep.
	TxMsgOrder, RxMsgOrder Order
}

func (i Info) String() string {
	return fmt.Sprintf("provider %q fabric %q domain %q caps %v mode %v mr_mode %v max_msg_size %d cq_data_size %d mr_key_size %d msg_order tx %v rx %v threading %v",
		i.Provider, i.Fabric, i.Domain, i.Caps, i.Mode, i.MRMode, i.MaxMsgSize, i.CQDataSize, i.MRKeySize, i.TxMsgOrder, i.RxMsgOrder, i.Threading)
}

// Addr is a peer's address in an address vector (fi_addr_t).
type Addr uint64

// AddrUnspec is FI_ADDR_UNSPEC: receive from any peer.
const AddrUnspec Addr = ^Addr(0)

// Completion is one completion-queue entry (FI_CQ_FORMAT_DATA), or an error entry.
type Completion struct {
	ID    uint64 // the operation's ID (its context); 0 for remote writes without a receive
	Flags Caps   // FI_SEND, FI_RECV, FI_RMA, FI_REMOTE_WRITE, ...
	Len   uint64
	// Data is the remote CQ data when HasData.
	Data    uint64
	HasData bool
	// Err is nil on success, else a *CompletionError.
	Err error
}

// CompletionError is an error entry read by fi_cq_readerr.
type CompletionError struct {
	ID        uint64
	Flags     Caps
	Errno     int    // positive libfabric errno (e.g. FI_EIO, FI_ECANCELED)
	ProvErrno int    // provider-specific
	Text      string // fi_cq_strerror's text
}

func (e *CompletionError) Error() string {
	return fmt.Sprintf("%s %d %v failed: fi_cq_readerr: errno %d, provider errno %d: %s",
		OpName(e.Flags), e.ID, e.Flags, e.Errno, e.ProvErrno, e.Text)
}

// OpName names the operation a completion's flags describe, as the calls that post it.
func OpName(f Caps) string {
	switch {
	case f&CapRMA != 0 && f&CapRemoteWrite != 0:
		return "remote write (fi_write/fi_writedata at the peer)"
	case f&CapRMA != 0 && f&CapWrite != 0:
		return "write (fi_write/fi_writedata)"
	case f&CapRMA != 0 && f&CapRead != 0:
		return "read (fi_read)"
	case f&CapRecv != 0:
		return "receive (fi_recv)"
	case f&CapSend != 0:
		return "send (fi_send/fi_senddata)"
	}
	return "operation"
}

// Local is local memory for a post: Len bytes at Addr (outside the Go heap), inside MR
// (required where the domain's MR mode has MRLocal; may be nil elsewhere).
type Local struct {
	Addr uintptr
	Len  int
	MR   *MR
}

// Remote is a peer's registered memory: RMA address (a virtual address under MRVirtAddr,
// else an offset into the region; see MR.RemoteAddr) and key.
type Remote struct {
	Addr uint64
	Key  uint64
}

// CQConfig configures a completion queue.
type CQConfig struct {
	Size int // entries (0: the provider's default)
	// Wait asks for a wait object so ReadWait can sleep; where the provider has none the CQ
	// is opened without and CQ.CanWait reports false.
	Wait bool
	// WaitFD asks for a file-descriptor wait object (FI_WAIT_FD) a caller can poll with
	// others (CQ.WaitFD, Domain.TryWait); where the provider refuses one, Wait decides.
	WaitFD bool
}

// EndpointConfig binds an endpoint's address vector and completion queues.
type EndpointConfig struct {
	AV         *AV
	TxCQ, RxCQ *CQ // may be the same CQ
	// SelectiveCompletion binds the transmit CQ with FI_SELECTIVE_COMPLETION: only the
	// transmit operations posted by Post with Signaled complete there (Send, SendData,
	// Write and WriteData then complete nowhere). Receives always complete.
	SelectiveCompletion bool
}

// OpKind is the kind of a posted operation.
type OpKind uint8

// Operation kinds.
const (
	OpSend  OpKind = 0 // fi_sendmsg
	OpRecv  OpKind = 1 // fi_recvmsg
	OpWrite OpKind = 2 // fi_writemsg
)

// Op is one operation for Endpoint.Post.
type Op struct {
	Kind  OpKind
	Local Local
	// Peer is the destination of a send or write; a receive takes any peer's message
	// (give AddrUnspec).
	Peer   Addr
	Remote Remote // OpWrite
	// Data is remote CQ data sent with a send or write when HasData.
	Data    uint64
	HasData bool
	ID      uint64
	// Signaled asks for a completion on an endpoint with SelectiveCompletion.
	Signaled bool
}

// ObjectCounts counts live libfabric objects of each kind.
type ObjectCounts struct {
	Fabrics, Domains, AVs, CQs, Endpoints, MRs int64
	Lanes                                      int64 // the threads of LaneSets not closed
}

// Zero reports whether no object is live.
func (c ObjectCounts) Zero() bool { return c == ObjectCounts{} }

var live struct {
	fabrics, domains, avs, cqs, eps, mrs, lanes atomic.Int64
}

// Live returns how many libfabric objects this process currently has open. Tests compare
// it with a snapshot to catch leaks.
func Live() ObjectCounts {
	return ObjectCounts{
		Fabrics: live.fabrics.Load(), Domains: live.domains.Load(), AVs: live.avs.Load(),
		CQs: live.cqs.Load(), Endpoints: live.eps.Load(), MRs: live.mrs.Load(),
		Lanes: live.lanes.Load(),
	}
}

// LaneConfig is one lane of a LaneSet: the endpoints its thread drives, each with the
// completion queue its transmit operations complete on (opened with CQConfig.WaitFD where
// the thread should sleep on it), and the CPU it is pinned to (-1: not pinned).
type LaneConfig struct {
	CPU       int
	Endpoints []*Endpoint
	CQs       []*CQ
}

// LaneCompletion is a completion a lane read: Ep is the endpoint's index in its lane.
type LaneCompletion struct {
	Completion
	Ep int
}

// LaneFailure is a batch a lane did not post, or not all of: Tag and WRs as handed to Post,
// Ops its operations not posted. Err names the failed call for the first batch.
type LaneFailure struct {
	Lane, Tag, WRs, Ops int
	Err                 error
}
