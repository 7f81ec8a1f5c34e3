// Package fabric is the narrow interface through which the capture engines
// (pkg/capture) talk to an RDMA transport: endpoints of RC queue pairs, their
// work requests and completions, and the receiver's and sender's fabrics that
// own the memory registration. The engine owns these types; adapters
// implement them: pkg/capture/verbsfabric over libibverbs in production,
// pkg/capture/memfabric in memory for host tests, and a libfabric adapter
// can sit beside them.
//
// Work requests name ring blocks and buffer offsets, never raw pointers or
// keys: the fabric owns the memory registration and turns a (block, offset)
// into an address and lkey in O(1).
//
// The package holds types only, no implementation, and imports no cgo.
package fabric
