package verbs

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"
)

// ErrNotSupported is returned by every call of the pure-Go twin (no cgo or not Linux).
var ErrNotSupported = errors.New("RDMA verbs not supported in this build (needs linux and cgo with libibverbs)")

// ErrClosed is returned by operations on a closed object.
var ErrClosed = errors.New("verbs object already closed")

// Access is a set of memory-region / queue-pair access flags (enum ibv_access_flags).
type Access int

// Access flags, with libibverbs' values.
const (
	AccessLocalWrite   Access = 1
	AccessRemoteWrite  Access = 2
	AccessRemoteRead   Access = 4
	AccessRemoteAtomic Access = 8
)

// MTU is a path MTU as enum ibv_mtu (1 = 256 bytes ... 5 = 4096 bytes).
type MTU int

// Path MTUs.
const (
	MTU256  MTU = 1
	MTU512  MTU = 2
	MTU1024 MTU = 3
	MTU2048 MTU = 4
	MTU4096 MTU = 5
)

// Bytes returns the MTU in bytes (0 when invalid).
func (m MTU) Bytes() int {
	if m < MTU256 || m > MTU4096 {
		return 0
	}
	return 128 << m
}

func (m MTU) String() string {
	if b := m.Bytes(); b > 0 {
		return fmt.Sprint(b)
	}
	return fmt.Sprintf("MTU(%d)", int(m))
}

// PortState is enum ibv_port_state.
type PortState int

// Port states.
const (
	PortNop         PortState = 0
	PortDown        PortState = 1
	PortInit        PortState = 2
	PortArmed       PortState = 3
	PortActive      PortState = 4
	PortActiveDefer PortState = 5
)

func (s PortState) String() string {
	names := []string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}
	if s >= 0 && int(s) < len(names) {
		return names[s]
	}
	return fmt.Sprintf("PortState(%d)", int(s))
}

// QPState is enum ibv_qp_state.
type QPState int

// Queue-pair states.
const (
	QPReset QPState = 0
	QPInit  QPState = 1
	QPRTR   QPState = 2
	QPRTS   QPState = 3
	QPSQD   QPState = 4
	QPSQE   QPState = 5
	QPErr   QPState = 6
)

func (s QPState) String() string {
	names := []string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"}
	if s >= 0 && int(s) < len(names) {
		return names[s]
	}
	return fmt.Sprintf("QPState(%d)", int(s))
}

// DeviceAttr are the device attributes ringcap uses (struct ibv_device_attr).
type DeviceAttr struct {
	FirmwareVersion string
	NodeGUID        uint64
	VendorID        uint32
	VendorPartID    uint32
	MaxMRSize       uint64
	MaxQP           int
	MaxQPWR         int // work requests per queue
	MaxSGE          int
	MaxCQ           int
	MaxCQE          int
	MaxMR           int
	MaxPD           int
	MaxQPRdAtom     int // RDMA READ/atomic as target, per QP
	MaxQPInitRdAtom int // RDMA READ/atomic as initiator, per QP
	PhysPortCount   int
}

// PortAttr are the port attributes ringcap uses (struct ibv_port_attr).
type PortAttr struct {
	State       PortState
	MaxMTU      MTU
	ActiveMTU   MTU
	GIDTableLen int
	LinkLayer   string // "Ethernet", "InfiniBand" or "Unspecified"
	LID         uint16
	MaxMsgSize  uint32
}

// GIDType is the type of a GID table entry (enum ibv_gid_type).
type GIDType int

// GID types.
const (
	GIDTypeIB     GIDType = 0
	GIDTypeRoCEv1 GIDType = 1
	GIDTypeRoCEv2 GIDType = 2
)

func (t GIDType) String() string {
	switch t {
	case GIDTypeIB:
		return "IB"
	case GIDTypeRoCEv1:
		return "RoCE v1"
	case GIDTypeRoCEv2:
		return "RoCE v2"
	}
	return fmt.Sprintf("GIDType(%d)", int(t))
}

// SysfsName is how /sys/class/infiniband/*/ports/*/gid_attrs/types/* spells the type.
func (t GIDType) SysfsName() string {
	if t == GIDTypeRoCEv2 {
		return "RoCE v2"
	}
	return "IB/RoCE v1"
}

// GIDEntry is one valid entry of a port's GID table.
type GIDEntry struct {
	Index  int
	Port   int
	GID    net.IP // 16 bytes
	Type   GIDType
	Netdev string // owning network device ("" for InfiniBand)
}

// CQConfig configures a completion queue.
type CQConfig struct {
	// Entries is the minimum number of completions the CQ holds; clamped to the device's max_cqe.
	Entries int
	// Notify gives the CQ its own completion channel so PollWait can sleep instead of spin.
	Notify bool
}

// QPConfig configures an RC queue pair. Sizes are clamped to the device's limits.
type QPConfig struct {
	SendCQ, RecvCQ *CQ
	MaxSendWR      int
	MaxRecvWR      int
	MaxSendSGE     int // default 1
	MaxRecvSGE     int // default 1
	MaxInlineData  int
	// SignalAll generates a completion for every send work request; otherwise only for
	// those with SendWR.Signaled.
	SignalAll bool
}

// QPCaps are a queue pair's actual capacities.
type QPCaps struct {
	MaxSendWR, MaxRecvWR, MaxSendSGE, MaxRecvSGE, MaxInlineData int
}

// RTRConfig moves a QP from INIT to RTR (ready to receive): the remote side and the path.
type RTRConfig struct {
	PathMTU         MTU
	RemoteQPN       uint32
	RemotePSN       uint32 // the remote's initial send PSN (our expected receive PSN)
	RemoteGID       net.IP // RoCE: always routed through the GRH
	SGIDIndex       int    // local GID index
	Port            int
	HopLimit        uint8
	TrafficClass    uint8
	MaxDestRdAtomic uint8
	MinRNRTimer     uint8 // IB encoding: 12 = 0.64 ms
}

// RTSConfig moves a QP from RTR to RTS (ready to send).
type RTSConfig struct {
	PSN         uint32 // our initial send PSN
	Timeout     uint8  // local ACK timeout, 4.096 µs * 2^Timeout
	RetryCount  uint8  // transport retries (0..7; Soft-RoCE treats 7 as "forever")
	RNRRetry    uint8  // receiver-not-ready retries (7 = infinite)
	MaxRdAtomic uint8
}

// DefaultRTR returns RTR settings for an RC connection; set the remote fields and SGIDIndex.
func DefaultRTR() RTRConfig {
	return RTRConfig{PathMTU: MTU4096, Port: 1, HopLimit: 64, MaxDestRdAtomic: 1, MinRNRTimer: 12}
}

// DefaultRTS returns RTS settings for an RC connection; set PSN. The retry
// count is 6, not 7: rxe retries forever at 7, so a peer that vanished would
// never fail the queue pair. RNR retries stay unlimited (back-pressure).
func DefaultRTS() RTSConfig {
	return RTSConfig{Timeout: 14, RetryCount: 6, RNRRetry: 7, MaxRdAtomic: 1}
}

// Opcode is a send work-request opcode (enum ibv_wr_opcode).
type Opcode int

// Send opcodes.
const (
	OpRDMAWrite        Opcode = 0
	OpRDMAWriteWithImm Opcode = 1
	OpSend             Opcode = 2
	OpSendWithImm      Opcode = 3
	OpRDMARead         Opcode = 4
)

func (o Opcode) String() string {
	switch o {
	case OpRDMAWrite:
		return "RDMA_WRITE"
	case OpRDMAWriteWithImm:
		return "RDMA_WRITE_WITH_IMM"
	case OpSend:
		return "SEND"
	case OpSendWithImm:
		return "SEND_WITH_IMM"
	case OpRDMARead:
		return "RDMA_READ"
	}
	return fmt.Sprintf("Opcode(%d)", int(o))
}

// SendWR is a send work request with at most one scatter/gather element (Length 0: none).
type SendWR struct {
	ID         uint64
	Opcode     Opcode
	Addr       uint64 // local buffer
	Length     uint32
	LKey       uint32
	RemoteAddr uint64 // RDMA opcodes
	RKey       uint32 // RDMA opcodes
	Imm        uint32 // *_WITH_IMM, in host byte order (sent big-endian)
	Signaled   bool
	Inline     bool
	Solicited  bool
}

// PostFailure is a batch handed to a PostThread that it did not post: the one whose post
// failed, and every batch after it.
type PostFailure struct {
	Tag   int    // the tag Post was given
	N     int    // work requests in the batch
	First SendWR // the batch's first work request
	Err   error
}

// RecvWR is a receive work request with one scatter/gather element (Length 0: none).
type RecvWR struct {
	ID     uint64
	Addr   uint64
	Length uint32
	LKey   uint32
}

// WCStatus is a work-completion status (enum ibv_wc_status).
type WCStatus int

// Work-completion statuses (the common ones; String names every libibverbs status).
const (
	WCSuccess        WCStatus = 0
	WCLocLenErr      WCStatus = 1
	WCLocProtErr     WCStatus = 4
	WCWRFlushErr     WCStatus = 5
	WCRemAccessErr   WCStatus = 10
	WCRetryExcErr    WCStatus = 12
	WCRNRRetryExcErr WCStatus = 13
)

var wcStatusNames = wcStatusNamesArr[:]

var wcStatusNamesArr = [...]string{
	"SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR", "LOC_PROT_ERR",
	"WR_FLUSH_ERR", "MW_BIND_ERR", "BAD_RESP_ERR", "LOC_ACCESS_ERR", "REM_INV_REQ_ERR",
	"REM_ACCESS_ERR", "REM_OP_ERR", "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR",
	"REM_INV_RD_REQ_ERR", "REM_ABORT_ERR", "INV_EECN_ERR", "INV_EEC_STATE_ERR", "FATAL_ERR",
	"RESP_TIMEOUT_ERR", "GENERAL_ERR", "TM_ERR", "TM_RNDV_INCOMPLETE",
}

var wcStatusText = map[WCStatus]string{
	WCLocLenErr:      "local length error",
	WCLocProtErr:     "local protection error",
	WCWRFlushErr:     "work request flushed (queue pair in error)",
	WCRemAccessErr:   "remote access error",
	WCRetryExcErr:    "transport retry counter exceeded",
	WCRNRRetryExcErr: "receiver-not-ready retry counter exceeded",
}

// String returns the libibverbs name without the IBV_WC_ prefix, e.g. "RETRY_EXC_ERR".
func (s WCStatus) String() string {
	if s >= 0 && int(s) < len(wcStatusNames) {
		return wcStatusNames[s]
	}
	return fmt.Sprintf("WCStatus(%d)", int(s))
}

// WCOpcode is a work-completion opcode (enum ibv_wc_opcode).
type WCOpcode int

// Work-completion opcodes.
const (
	WCSend            WCOpcode = 0
	WCRDMAWrite       WCOpcode = 1
	WCRDMARead        WCOpcode = 2
	WCRecv            WCOpcode = 128
	WCRecvRDMAWithImm WCOpcode = 129
)

func (o WCOpcode) String() string {
	switch o {
	case WCSend:
		return "SEND"
	case WCRDMAWrite:
		return "RDMA_WRITE"
	case WCRDMARead:
		return "RDMA_READ"
	case WCRecv:
		return "RECV"
	case WCRecvRDMAWithImm:
		return "RECV_RDMA_WITH_IMM"
	}
	return fmt.Sprintf("WCOpcode(%d)", int(o))
}

// WorkCompletion is one polled completion.
type WorkCompletion struct {
	ID        uint64
	Status    WCStatus
	Opcode    WCOpcode // valid only when Status is WCSuccess (receive opcodes have bit 7 set)
	ByteLen   uint32
	Imm       uint32 // host byte order; valid when HasImm
	HasImm    bool
	QPN       uint32
	VendorErr uint32
}

// Err returns nil for a successful completion, else a *CompletionError.
func (wc *WorkCompletion) Err() error {
	if wc.Status == WCSuccess {
		return nil
	}
	return &CompletionError{ID: wc.ID, Status: wc.Status, QPN: wc.QPN, VendorErr: wc.VendorErr}
}

// CompletionError is a failed work completion; its message names the status.
type CompletionError struct {
	ID        uint64
	Status    WCStatus
	QPN       uint32
	VendorErr uint32
}

func (e *CompletionError) Error() string {
	s := fmt.Sprintf("work completion failed: IBV_WC_%s", e.Status)
	if t, ok := wcStatusText[e.Status]; ok {
		s += " (" + t + ")"
	}
	return fmt.Sprintf("%s, wr_id=%d qp=%d vendor_err=%#x", s, e.ID, e.QPN, e.VendorErr)
}

// ObjectCounts counts live verbs objects of each kind.
type ObjectCounts struct {
	Contexts, PDs, MRs, CQs, QPs, CompChannels, PostThreads int64
}

// Zero reports whether no object is live.
func (c ObjectCounts) Zero() bool { return c == ObjectCounts{} }

var live struct {
	contexts, pds, mrs, cqs, qps, channels, postThreads atomic.Int64
}

// Live returns how many verbs objects this process currently has open. Tests compare it
// with a snapshot to catch leaks.
func Live() ObjectCounts {
	return ObjectCounts{
		Contexts: live.contexts.Load(), PDs: live.pds.Load(), MRs: live.mrs.Load(),
		CQs: live.cqs.Load(), QPs: live.qps.Load(), CompChannels: live.channels.Load(),
		PostThreads: live.postThreads.Load(),
	}
}
