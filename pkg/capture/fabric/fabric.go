package fabric

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// Op is the opcode of a send work request.
type Op uint8

// Send opcodes.
const (
	OpSendImm  Op = 1 // SEND_WITH_IMM into the peer's next receive WR
	OpWriteImm Op = 2 // RDMA_WRITE_WITH_IMM to RemoteAddr/RKey
	OpWrite    Op = 3 // RDMA_WRITE to RemoteAddr/RKey: no completion at the peer
)

// RecvWR is a receive work request. Length 0 posts a WR without a scatter
// entry (write mode: it only catches the immediate of an RDMA write).
type RecvWR struct {
	ID     uint64
	Block  int    // ring block index the scatter entry points into
	Offset uint64 // byte offset inside the block
	Length uint64
}

// SendWR is a send work request whose data lies in the sender's registered
// buffer at [Offset, Offset+Length).
type SendWR struct {
	ID     uint64
	Op     Op
	Offset uint64
	Length uint64
	Imm    uint32
	// Signaled asks for a completion when the WR succeeds. A queue pair
	// completes its WRs in order, so a signalled WR's completion also
	// accounts for the unsignalled ones posted before it. A failed (or
	// flushed) WR always completes.
	Signaled   bool
	RemoteAddr uint64 // OpWriteImm and OpWrite only
	RKey       uint64 // OpWriteImm and OpWrite only (a verbs rkey is 32-bit)
}

// Completion is one work completion.
type Completion struct {
	ID    uint64
	QP    int  // index of the queue pair in the endpoint
	Recv  bool // a receive completion (else a send completion)
	Bytes uint32
	Imm   uint32
	// Err is nil on success; otherwise it names the work-completion status
	// (for example "IBV_WC_RETRY_EXC_ERR").
	Err error
}

// DeviceConfig names what an adapter opens: the RDMA device, port and GID
// index (verbs), or the libfabric provider and domain (ofi; empty: the
// first fi_getinfo offers).
type DeviceConfig struct {
	Device   string
	Port     int
	GIDIndex int
	Provider string
	Domain   string
	// Node is the local address libfabric endpoints bind to when the
	// receiver chose it (ofi with --listen-on rdma: the address of the
	// RDMA netdev's RoCE v2 GID); empty: the listen address's.
	Node string
}

// EndpointConfig sizes one connection's queue pairs.
type EndpointConfig struct {
	QPs       int
	SendDepth int  // send WRs per queue pair
	RecvDepth int  // receive WRs per queue pair
	CQPerQP   bool // one completion queue per queue pair instead of one shared
	// AckTimeout is the local ACK timeout exponent of the queue pairs: they
	// retransmit after 4.096 µs * 2^AckTimeout without an acknowledgement
	// (0: DefaultAckTimeout).
	AckTimeout uint8
}

// DefaultAckTimeout is 18, about 1.07 s (NCCL's default). perftest's 14
// (67 ms) is exceeded by acknowledgements that are merely late on a busy or
// emulated host, and every such spurious timeout resends up to 128 packets
// per queue pair that had already arrived; a real loss on a lossless RoCE
// fabric, which is rare, takes longer to repair instead.
const DefaultAckTimeout = 18

// Endpoint is one side of a connection: N RC queue pairs and their
// completion queue(s). It is used by one goroutine, except that PostSend may
// run concurrently for different queue pairs (the sender's posting threads).
type Endpoint interface {
	// Local describes this side's queue pairs for the handshake.
	Local() []wire.QPInfo
	// Connect moves every queue pair INIT -> RTR -> RTS against the peer's.
	Connect(remote []wire.QPInfo) error
	// PostRecv posts receive WRs on queue pair qp, in order. It keeps no
	// reference to wrs: the caller reuses it.
	PostRecv(qp int, wrs []RecvWR) error
	// PostSend posts send WRs on queue pair qp, in order.
	PostSend(qp int, wrs []SendWR) error
	// Poll fills wcs with ready completions without blocking.
	Poll(wcs []Completion) (int, error)
	// Close destroys the queue pairs and completion queues; idempotent.
	Close() error
}

// ReceiverFabric is the receiver's RDMA device with the ring registered.
type ReceiverFabric interface {
	// Open creates one connection's queue pairs.
	Open(ctx context.Context, cfg EndpointConfig) (Endpoint, error)
	// Registration is how the ring was registered: the write-mode table (one
	// region for WholeRing, one per block for PerBlock), plus a description.
	Registration() (wire.MRMode, []wire.Region, Registered)
	// Fabric is the transport and provider, which a sender must share.
	Fabric() wire.Fabric
	Close() error
}

// SenderFabric is the sender's RDMA device with its send buffer registered.
type SenderFabric interface {
	Open(ctx context.Context, cfg EndpointConfig) (Endpoint, error)
	// Buffer is the registered memory SendWR offsets refer to.
	Buffer() []byte
	// Fabric is the transport and provider, told to the receiver.
	Fabric() wire.Fabric
	Close() error
}

// WCError is a failed work completion; Status is the verbs status name.
type WCError struct {
	QP     int
	Status string
	Recv   bool
}

func (e *WCError) Error() string {
	side := "send"
	if e.Recv {
		side = "receive"
	}
	return fmt.Sprintf("queue pair %d: %s completion failed: %s", e.QP, side, e.Status)
}

// The capabilities below are optional: the engines look for them with a type
// assertion on an Endpoint and fall back to polling, or to posting threads
// of their own, when an endpoint lacks them.

// Notifier is an Endpoint that can sleep until a completion arrives (the
// receiver's idle loop uses it).
type Notifier interface {
	// Arm requests an event for the next completion (poll again after it);
	// an error means the endpoint cannot wait this way.
	Arm() error
	// Events delivers a value after each completion event Arm requested.
	Events() <-chan struct{}
}

// Waiter is an Endpoint whose PollWait sleeps until a completion arrives (the
// sender uses it while every send slot is in flight); ok is false when the
// endpoint cannot wait.
type Waiter interface {
	PollWait(ctx context.Context, wcs []Completion) (n int, ok bool, err error)
}

// ThreadPoster is an Endpoint with posting threads of its own, one pinned to
// each CPU of cpus; depth bounds the work requests ever handed over and not
// yet posted.
type ThreadPoster interface {
	StartPostThreads(cpus []int, depth int, log *slog.Logger) (PostLanes, error)
}

// PostLanes post the sender's work requests from one OS thread per CPU, each
// pinned there; queue pair q is always posted from thread q mod Threads(), so
// each queue pair's doorbells still come from one CPU, in order. A post that
// fails is reported back (Failed, TakeFailures) with the number of work
// requests it did not post; after a failure a thread posts nothing more and
// reports every later batch too.
type PostLanes interface {
	// Post hands a copy of wrs (queue pair q's, in order) to q's thread. An
	// error means they were not handed over.
	Post(q int, wrs []SendWR) error
	// Failed is done at the first failed post.
	Failed() context.Context
	// Stop lets every thread post what it was handed and waits for them;
	// idempotent.
	Stop()
	// TakeFailures returns the failures reported so far and forgets them.
	TakeFailures() []PostFailure
	// Threads is the number of posting threads.
	Threads() int
}

// PostFailure is a batch a posting thread did not post.
type PostFailure struct {
	QP  int // queue pair
	N   int // work requests in the batch
	Err error
}

// PostError says which of queue pair q's work requests a failed post held:
// the error every poster, the engine's or an adapter's, reports.
func PostError(q int, wrs []SendWR, err error) error {
	return fmt.Errorf("post slices %d.. on queue pair %d: %w", wrs[0].Imm, q, err)
}
