package receiver

import (
	"context"
	"sync"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/obsheader"
	"github.com/ringcap/ringcap/pkg/capture/ring"
	"github.com/ringcap/ringcap/pkg/capture/status"
	"github.com/ringcap/ringcap/pkg/dada"
)

// holdAfter is how long opening a block may wait before the receiver counts
// itself held back by its readers (a free block opens in microseconds).
const holdAfter = time.Millisecond

// ringWriter is the ring's writer that reports to the status: the
// observation's header when it goes into the ring (its main keys,
// UTC_START), and the time spent waiting for the readers to free a block
// (held back: packets wait in the socket buffers meanwhile, and past them
// the kernel drops them).
type ringWriter struct {
	ring.DadaWriter
	t        *status.Tracker
	presence *presenceWriter // the presence ring's writer, which takes the header too (nil: none)
}

// WriteHeader implements ring.BlockWriter.
func (w ringWriter) WriteHeader(hdr []byte) error {
	if err := w.DadaWriter.WriteHeader(hdr); err != nil {
		return err
	}
	w.presence.keepHeader(hdr)
	if hd, err := dada.ParseHeader(hdr); err == nil {
		w.t.HeaderWritten(obsheader.StatusFields(hd))
	}
	return nil
}

// OpenBlock implements ring.BlockWriter.
func (w ringWriter) OpenBlock(ctx context.Context) (int, error) {
	defer w.hold()()
	return w.DadaWriter.OpenBlock(ctx)
}

// OpenBlocks implements ring.BlocksOpener.
func (w ringWriter) OpenBlocks(ctx context.Context, idx []int) (int, error) {
	defer w.hold()()
	return w.DadaWriter.OpenBlocks(ctx, idx)
}

// hold starts watching an open: past holdAfter it is a hold, which the
// returned function ends.
func (w ringWriter) hold() func() {
	start := time.Now()
	var mu sync.Mutex
	began, done := false, false
	timer := time.AfterFunc(holdAfter, func() {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			began = true
			w.t.HoldBegan(start)
		}
	})
	return func() {
		timer.Stop()
		mu.Lock()
		defer mu.Unlock()
		done = true
		if began {
			w.t.HoldEnded(time.Now())
		}
	}
}
