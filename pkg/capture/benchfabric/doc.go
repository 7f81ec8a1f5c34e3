// Package benchfabric is a benchmark fabric (pkg/capture/fabric) for the
// headroom benchmarks of `make bench-headroom`: it moves no data at all and
// completes work requests the moment the engine polls, so that what a
// benchmark measures is the engine's own CPU cost per message and per block
// (polling, bookkeeping, reposting, credits, the ring's handoffs), which is
// what limits ringcap on a real NIC, where the data moves without the CPU.
//
// The receiver side completes each posted receive at once with its full
// length and the slice number as its immediate, as a NIC reports a SEND that
// filled it (send mode), and one RDMA_WRITE_WITH_IMM completion per block
// once the block has been granted (write mode: the benchmark's peer reports
// grants with Grant); reposts cost nothing. The sender side completes every
// signalled send at once. Each Poll and post makes as many cgo crossings as
// the verbs adapter's would, into a no-op (verbs.Noop; none in a build
// without cgo), so the figures carry their cost.
//
// It is never used to claim anything about real links: nothing crosses a
// wire, and nothing is written into the ring's blocks. Like memfabric it
// imports no engine code.
package benchfabric
