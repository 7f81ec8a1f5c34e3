// Package memfabric is an in-memory RC fabric (pkg/capture/fabric) for host
// tests of the capture engines: each queue pair delivers its work requests in
// order on its own goroutine (so queue pairs interleave freely, as on a
// wire), SENDs consume the peer's receive WRs in order and wait while none is
// posted (RNR back-pressure), RDMA writes land through the receiver's region
// table, and errors complete with verbs status names. Hooks on the Net stall
// queue pairs, lose writes to a closed peer or fail posts, to test what the
// engines do then.
//
// It imports no engine code, so the engine's own tests can use it.
package memfabric
