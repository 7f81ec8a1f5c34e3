// Package sender is the sending end of a capture: it connects to a ringcap
// receiver, negotiates queue pairs and mode over the control connection
// (package wire), and streams a source (the test pattern, a file, a reader)
// over the RC queue pairs of a fabric (package fabric): in send mode slice g
// on queue pair g mod N, in write mode each block whole on the next queue pair
// with room, into the block the receiver granted. It reports progress and how
// long the receiver was held back by its ring's readers. Run adds the wiring
// of `ringcap send` (device choice, the posting policy for the device's
// driver: PostingPolicy, fabric); Send streams over a fabric given.
//
// A stream is a pipeline (see planner.go): a pure planner says which slice a
// queue pair posts next and where it lands, the receiver's grants admit it,
// a pacer holds it to the rate, the source fills its send slot, and a poster
// hands the batch to the fabric (from this thread, or from posting threads).
//
// It imports neither the receiver engine (package capture) nor a fabric
// adapter, so the receiver's tests can drive it over the in-memory fabric.
package sender
