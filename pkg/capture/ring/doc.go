// Package ring is the receiver's ring side: what it needs from the ring's
// writer (BlockWriter, with pkg/dada's Writer adapted by DadaWriter), the
// Worker goroutine that opens blocks ahead of the data and hands filled
// blocks to the readers in order, and the drain that waits for the readers
// before a ring is destroyed. It knows nothing of the transport that fills
// the blocks.
package ring
