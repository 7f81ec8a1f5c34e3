// Package ofifabric is the capture engine's fabric (pkg/capture/fabric) over
// libfabric (pkg/rdma/ofi): a Receiver with the ring registered, a Sender
// with a registered send buffer, and their endpoints.
//
// A "queue pair" is one reliable-datagram (FI_EP_RDM) endpoint with an
// address vector and a completion queue of its own: each talks to exactly
// one peer endpoint, and its completions name it without a lookup. Connect
// inserts the peer's address (wire.QPInfo.Addr, from fi_getname) into the
// endpoint's address vector.
//
// Write mode is fi_writemsg with remote CQ data (the immediate) into the
// receiver's advertised regions; send mode is fi_sendmsg with remote CQ data
// into posted receives that point into ring blocks. The ring is registered
// by the shared rule (fabric.ChooseMRMode): one region over the contiguous
// ring, else one per block. Region addresses are virtual addresses or
// offsets as the domain's FI_MR_VIRT_ADDR says, keys the provider's under
// FI_MR_PROV_KEY, descriptors passed on every post under FI_MR_LOCAL; where
// the mode has FI_RX_CQ_DATA, write mode posts a receive for every
// immediate.
//
// A remote write's completion length is never used (fi_cq(3) leaves it to
// the provider; tcp;ofi_rxm reports 0, verbs;ofi_rxm on rxe its receive
// buffer's size): with 8 bytes of remote CQ data the length rides in the
// upper half; with fewer (verbs;ofi_rxm, efa) a write carrying an immediate
// goes out plain and a 4-byte length message follows it (a send with the
// immediate as CQ data into a receive posted in registered length words),
// which needs FI_ORDER_SAW as well.
//
// The engine needs RC's ordering: a queue pair's sends fill its posted
// receives in order (send mode: FI_ORDER_SAS), and a block's plain writes
// land before the write that carries its immediate (write mode:
// FI_ORDER_WAW). Both are asked of fi_getinfo; a provider that cannot keep
// them, or lacks FI_RMA or 4 bytes of remote CQ data, is refused with an
// error naming what it lacks. The engine also takes a signalled send
// completion to cover the unsignalled sends before it; libfabric does not
// promise completion order, so every transmit operation completes and the
// endpoint hands the engine a signalled one's completion only after those
// posted before it.
//
// Each endpoint has a lock of its own, where the domain's threading model
// lets endpoints with their own completion queues run on different threads
// (every model but FI_THREAD_DOMAIN; tcp, verbs, shm and efa are
// FI_THREAD_SAFE), else all share one, and Poll skips an endpoint a post
// holds (the post reads that endpoint's completion queue itself while the
// provider is busy). ofi.Crossings counts the data path's calls into C.
//
// The sender's endpoint is a fabric.ThreadPoster: with posting threads
// (--post-threads; one per CPU on a software RDMA domain such as rxe0) its
// endpoints run on ofi.LaneSet's C threads, each posting what it is handed
// and reading its endpoints' completion queues, which is what progresses
// ofi_rxm; the sender's loop then hands batches over and takes translated
// completions, calling no libfabric function until the threads stop.
//
// Where the provider gives the completion queues file-descriptor wait
// objects (FI_WAIT_FD; tcp does, shm does not), an endpoint puts them in one
// epoll set in Go's network poller and sleeps on it after fi_trywait allows,
// so a manual-progress provider is progressed as libfabric prescribes: the
// receiver's endpoint is a fabric.Notifier (a goroutine sleeps after each
// Arm), the sender's a fabric.Waiter (PollWait sleeps while every send slot
// is in flight; its context or Close wake it). Without them the receive loop
// polls with short sleeps, which starves tcp;ofi_rxm of progress (a few Gb/s
// instead of over 10 on loopback), and the sender polls too, saying so once.
//
// Close closes every libfabric object (endpoints, memory regions, address
// vectors, completion queues, the domain), idempotently; ofi.Live counts
// them in tests. Built without cgo it compiles against the pure-Go twin of
// pkg/rdma/ofi, whose calls fail with ofi.ErrNotSupported.
package ofifabric
