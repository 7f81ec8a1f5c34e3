// Package fabric is the narrow interface through which the capture engines
// (pkg/capture) talk to an RDMA transport: endpoints of RC queue pairs, their
// work requests and completions, and the receiver's and sender's fabrics that
// own the memory registration. The engine owns these types; adapters
// implement them: pkg/capture/verbsfabric over libibverbs,
// pkg/capture/ofifabric over libfabric, pkg/capture/memfabric in memory for
// host tests.
//
// Work requests name ring blocks and buffer offsets, never raw pointers or
// keys: the fabric owns the memory registration and turns a (block, offset)
// into an address and lkey in O(1).
//
// The package holds types and one rule every adapter shares, how a ring is
// registered (ChooseMRMode), and imports no cgo.
package fabric
