// Package verbs is ringcap's libibverbs binding (rdma-core). It registers plain memory regions
// (an address, a length and access flags) and knows nothing of rings: registering a PSRDADA
// ring (WholeRing, PerBlock or Auto) is the capture engine's business (pkg/capture/verbsfabric).
//
// It is one of the project's two cgo packages (with pkg/rdma/ofi): the binding is built with
// `//go:build linux && cgo`; elsewhere (and with CGO_ENABLED=0) a pure-Go twin keeps the same
// API and every call returns ErrNotSupported, so the device plugin and the operator build
// without rdma-core.
//
// Objects: a Context (an opened device) owns protection domains (PD), completion queues (CQ);
// a PD owns memory regions (MR) and RC queue pairs (QP). Each object has one Go owner and an
// idempotent Close, and closing an object first closes what depends on it (Context.Close
// tears everything down in the order QP, CQ, MR, PD, device). Constructors clean up after
// a partial failure. Live reports how many objects of each kind are open, so tests can fail
// on leaks.
//
// The hot path crosses cgo in batches: QP.PostSend and QP.PostRecv post a whole slice of
// work requests as one chain, CQ.Poll returns many completions per call, and CQ.PollWait
// sleeps on a completion channel instead of spinning when a CQ is created with Notify.
// A PostThread posts from a C thread of its own, pinned to one CPU and unknown to the Go
// scheduler, fed through a single-producer queue: for senders that post all the time, whose
// goroutines would otherwise sit in cgo calls that the Go runtime treats as system calls.
// Its queue, sleep, wake-up and stop are the C core pkg/rdma/ofi's lanes share
// (pkg/rdma/internal/cpost, tested under ThreadSanitizer); the thread adds the posts.
//
// Registered memory must not be managed by the Go garbage collector: use shared memory,
// mmap'd memory (see Mmap) or C memory.
package verbs
