// Package ofi is ringcap's libfabric binding (Debian's libfabric 1.17). Like pkg/rdma/verbs
// it registers plain memory and posts plain operations; it knows nothing of rings or of the
// capture engine: the fabric adapter built on it implements pkg/capture/fabric.
//
// It is built with `//go:build linux && cgo`; elsewhere (and with CGO_ENABLED=0) a pure-Go
// twin keeps the same API and every call that would touch libfabric returns ErrNotSupported.
//
// Discovery: Discover runs fi_getinfo with Hints (reliable-datagram FI_EP_RDM endpoints,
// the capabilities asked for, a provider such as "tcp;ofi_rxm", "verbs;ofi_rxm", "efa" or
// "shm", a domain) and reports what each answer offers: capabilities, mode bits, MR mode
// bits, message and CQ-data sizes. The binding tells the provider which mode bits and MR
// modes it honours (Hints.Mode, Hints.MRMode) and then honours what the provider asks,
// never assuming: keys chosen by the provider under MRProvKey, virtual addresses or
// offsets under MRVirtAddr, descriptors passed on every post under MRLocal.
//
// Objects: Open returns a Domain (a fabric and a domain), the owner of address vectors (AV,
// FI_AV_TABLE), completion queues (CQ, FI_CQ_FORMAT_DATA, with a wait object where the
// provider has one), endpoints (Endpoint, bound to one AV and a transmit and a receive CQ)
// and memory regions (MR). Each object has one Go owner and an idempotent Close; closing
// the Domain closes what it owns in the order endpoints, MRs, AVs, CQs, domain, fabric.
// Constructors clean up after a partial failure. Live counts open objects so tests fail on
// leaks.
//
// A CQ opened with CQConfig.WaitFD has a file-descriptor wait object (CQ.WaitFD) that a
// caller can poll together with others after Domain.TryWait (fi_trywait) says nothing is
// ready.
//
// Operations carry a 64-bit ID that libfabric hands back as the completion's context (an
// integer, never a Go pointer). Endpoint.Send, Recv, Write and WriteData post one
// operation; Endpoint.Post posts a batch (sends, receives, writes, with remote CQ data) in
// one cgo call, and with EndpointConfig.SelectiveCompletion only its Signaled transmit
// operations complete. A post that the provider cannot take now fails with an error
// matching ErrAgain: read completions (libfabric progresses there) and post again.
// Failed operations complete with an error entry (fi_cq_readerr) whose text is the
// provider's (fi_cq_strerror). A write the target rejects (a bad key) is reported to the
// writer only under Hints.DeliveryComplete: tcp;ofi_rxm and shm otherwise complete it
// successfully and drop it at the target.
//
// A LaneSet (Domain.StartLanes) runs C threads outside the Go runtime, each posting the
// operations handed to it on its endpoints and reading their completion queues, sleeping
// on their wait fds when nothing is ready; Go takes what they read and sleeps on one
// eventfd. It is how a sender keeps a manual-progress provider (ofi_rxm) moving on several
// CPUs without goroutines sitting in cgo calls. The threads' queue, sleep, wake-up and
// stop are the C core pkg/rdma/verbs shares (pkg/rdma/internal/cpost, tested under
// ThreadSanitizer); the lane adds the endpoints, the posts and the completion queues.
//
// Registered and posted memory must not be managed by the Go garbage collector: use shared
// memory, mmap'd memory or C memory.
//
// Tested here (host tests, loopback only): the "tcp;ofi_rxm" provider on domain "lo" and
// the "shm" provider. verbs;ofi_rxm and efa follow the same code paths but are not tested
// by this package.
package ofi
