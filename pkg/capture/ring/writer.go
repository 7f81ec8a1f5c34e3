package ring

import (
	"context"

	"github.com/ringcap/ringcap/pkg/dada"
)

// BlockWriter is what the receiver needs from the ring's writer (pkg/dada's
// Writer through an adapter). Calls come from one goroutine at a time.
type BlockWriter interface {
	// WriteHeader writes the observation's header before its data.
	WriteHeader(hdr []byte) error
	// OpenBlock returns the ring index of the next block to fill, waiting
	// while the slowest reader still holds it; ctx cancels the wait.
	OpenBlock(ctx context.Context) (int, error)
	// MarkFilled marks the oldest open block filled with nbytes. eod ends the
	// observation on this block (also implied by nbytes < block size).
	// ctx ends the waits an end of data may have for the readers.
	MarkFilled(ctx context.Context, nbytes int, eod bool) error
	// EndOfData ends the observation when no block carried the end (nothing
	// was received) and releases blocks that were opened but not used; ctx
	// ends its waits for the readers.
	EndOfData(ctx context.Context) error
}

// FullBlocksFiller is a BlockWriter that can mark several full blocks filled
// in one step (one wake-up of each reader instead of one per block), as if
// MarkFilled(block size, false) had been called k times.
type FullBlocksFiller interface {
	MarkFilledFull(k int) error
}

// BlocksOpener is a BlockWriter that can open several blocks in one step:
// into idx, the first as OpenBlock does (waiting), then as many of the next
// ones as are free at once; at least one, at most len(idx).
type BlocksOpener interface {
	OpenBlocks(ctx context.Context, idx []int) (int, error)
}

// Geometry is the shape of the ring the receiver fills.
type Geometry struct {
	NBufs   int
	BufSize int
}

// GeometryOf returns the geometry of a ring's data blocks.
func GeometryOf(r *dada.Ring) Geometry {
	return Geometry{NBufs: r.NBufs(), BufSize: r.BufSize()}
}

// DadaWriter adapts a pkg/dada Writer to BlockWriter.
type DadaWriter struct{ W *dada.Writer }

// WriteHeader implements BlockWriter.
func (d DadaWriter) WriteHeader(hdr []byte) error { return d.W.WriteHeader(hdr) }

// OpenBlock implements BlockWriter.
func (d DadaWriter) OpenBlock(ctx context.Context) (int, error) {
	b, err := d.W.OpenBlock(ctx)
	return b.Index, err
}

// OpenBlocks implements BlocksOpener (at most 16 blocks per call).
func (d DadaWriter) OpenBlocks(ctx context.Context, idx []int) (int, error) {
	var wb [16]dada.WriteBlock
	n, err := d.W.OpenBlocks(ctx, wb[:min(len(idx), len(wb))])
	for i := range n {
		idx[i] = wb[i].Index
	}
	return n, err
}

// MarkFilled implements BlockWriter.
func (d DadaWriter) MarkFilled(ctx context.Context, nbytes int, eod bool) error {
	return d.W.MarkFilledContext(ctx, nbytes, eod)
}

// MarkFilledFull implements FullBlocksFiller.
func (d DadaWriter) MarkFilledFull(k int) error { return d.W.MarkFilledFull(k) }

// EndOfData implements BlockWriter.
func (d DadaWriter) EndOfData(ctx context.Context) error { return d.W.EndOfDataContext(ctx) }
