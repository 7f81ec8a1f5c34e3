// Package capture moves a byte stream over several RDMA RC queue pairs into the
// blocks of a PSRDADA ring (pkg/dada) without copies and without loss. It is
// the receiver engine of `ringcap recv` (Run, Receiver); the sender is package
// sender. The receiver is built in stages, each a package that owns its parts:
//
//   - placement: a stream byte offset to a ring block and a slot in it, the
//     window of open blocks, the end of an observation. Placement is by
//     sequence number, never by arrival order, so striping over queue pairs
//     cannot reorder data. It knows no transport;
//   - ring: the ring's writer (BlockWriter), the worker that opens blocks
//     ahead and hands filled ones to the readers, the drain before a ring is
//     destroyed;
//   - observation: one observation, owning its window, ring worker, header
//     (built by obsheader) and close order;
//   - status: the Tracker (status document and metrics);
//   - rc: the RC receive side over the fabric seam (package fabric): receive
//     work requests, grants, landing completions.
//
// This package holds what is RC and control-connection specific: the
// versioned out-of-band handshake over TCP (package wire), the session that
// runs one sender's stream (begin.go, stream.go, reap.go, control.go, idle.go)
// and the Receiver that serves senders one at a time. Everything talks to
// RDMA through package fabric, so the same code runs over libibverbs (package
// verbsfabric), libfabric (ofifabric) and an in-memory fabric (memfabric) in
// host tests.
//
// Two transfer modes exist. In send mode the receiver posts receive work
// requests whose scatter entries point straight into the current write blocks,
// one slice each; the sender SENDs slice g on queue pair g mod N. In write mode
// the receiver grants credits naming free blocks and the sender RDMA-WRITEs the
// slices into them, each block whole on one queue pair (the next one with a
// free send slot and no block takes the next block): a block's slices as
// plain RDMA WRITEs but the last, which goes with RDMA_WRITE_WITH_IMM, the
// immediate naming the slice (so the block) and
// the work completion carrying its byte count; RC order has placed the queue
// pair's earlier writes by then, so that one receive completion per block lands
// them all. A queue pair whose stream ends after
// a plain write (a --duration cutoff, a source that runs out, an interrupt)
// ends it with a zero-length RDMA_WRITE_WITH_IMM naming that slice. In both
// modes a block is marked filled in the ring only when every one of its bytes
// has landed, in sequence order.
package capture
