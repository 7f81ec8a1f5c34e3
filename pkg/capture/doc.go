// Package capture moves a byte stream over several RDMA RC queue pairs into the
// blocks of a PSRDADA ring (pkg/dada) without copies and without loss. It holds
// the pieces of `ringcap recv` and `ringcap send`:
//
//   - the versioned out-of-band handshake and control messages that travel over
//     TCP (package wire): queue-pair numbers, PSNs, LIDs, GIDs and MTUs, the
//     receiver's ring geometry and, in write mode, the block address/rkey table;
//     credits naming free blocks and the sender's end-of-stream message;
//   - the block-assembly logic (wire.Geometry, assembly.go): how the stream is cut into
//     slices of --msg-bytes, which queue pair carries which slice, which block a
//     completion belongs to, when a block is complete and the exact end-of-data
//     byte count. Placement is by sequence number, never by arrival order, so
//     striping over queue pairs cannot reorder data;
//   - the receiver and the sender engines, written against a narrow fabric
//     interface (package fabric, owned here) so the same code runs over
//     libibverbs (package verbsfabric) in production and over an in-memory
//     fabric (package memfabric) in host tests.
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
