package verbs

import "sync/atomic"

// crossings counts the data path's calls into C: one per ibv_poll_cq chunk
// (CQ.Poll), per chain of up to 256 posted work requests (QP.PostSend,
// QP.PostRecv), per batch handed to a posting thread (PostThread.Post), per
// completion-event request or fetch (Arm, WaitEvent) and per Noop. Setup and
// teardown calls are not counted.
var crossings atomic.Uint64

// Crossings is the number of data-path calls into C this process made so
// far (see crossings): per message and per block it is what a benchmark
// fabric must repeat (with Noop) to carry their cost. Without cgo it stays 0.
func Crossings() uint64 { return crossings.Load() }
