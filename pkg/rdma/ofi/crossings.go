package ofi

import "sync/atomic"

// crossings counts the data path's calls into C: one per chain of posted
// operations (Endpoint.Post), per fi_cq_read or fi_cq_sread chunk and error
// entry (CQ.Read, CQ.ReadWait) and per fi_trywait (Domain.TryWait). Setup,
// teardown and the one-operation calls (Send, Write, ...) are not counted.
var crossings atomic.Uint64

// Crossings is the number of data-path calls into C this process made so far
// (see crossings): divided by the messages moved, the adapter's cgo work per
// message. Without cgo it stays 0.
func Crossings() uint64 { return crossings.Load() }
