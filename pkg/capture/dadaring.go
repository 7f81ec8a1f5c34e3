package capture

import (
	"context"

	"github.com/ringcap/ringcap/pkg/dada"
)

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

// RingGeometryOf returns the geometry of a ring's data blocks.
func RingGeometryOf(r *dada.Ring) RingGeometry {
	return RingGeometry{NBufs: r.NBufs(), BufSize: r.BufSize()}
}
