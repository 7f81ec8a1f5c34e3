// Package verbsfabric is the capture engine's fabric (pkg/capture/fabric)
// over libibverbs (pkg/rdma/verbs): a Receiver with the ring registered for
// RDMA, a Sender with a registered send buffer, their endpoints of RC queue
// pairs, and the sender's posting threads that run outside the Go scheduler
// (verbs.PostThread). Built without cgo it compiles against the pure-Go twin
// of pkg/rdma/verbs, whose calls fail with verbs.ErrNotSupported.
package verbsfabric
