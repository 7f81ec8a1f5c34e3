package observation

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/placement"
	"github.com/ringcap/ringcap/pkg/capture/status"
	"github.com/ringcap/ringcap/pkg/dada"
)

// orderWriter logs the calls that end an observation.
type orderWriter struct {
	mu  sync.Mutex
	log *[]string
	n   int
}

func (w *orderWriter) add(s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	*w.log = append(*w.log, s)
}
func (w *orderWriter) WriteHeader([]byte) error { w.add("header"); return nil }
func (w *orderWriter) OpenBlock(ctx context.Context) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	return w.n - 1, nil
}
func (w *orderWriter) MarkFilled(_ context.Context, n int, eod bool) error {
	w.add("filled")
	return nil
}
func (w *orderWriter) EndOfData(context.Context) error { w.add("end of data"); return nil }

// End closes the data path attached to the observation before anything of
// its end reaches the ring, then commits the end (the header, the gap-free
// prefix of a stream cut short, the end of data), then stops the worker.
func TestEndClosesTheDataPathFirst(t *testing.T) {
	var log []string
	w := &orderWriter{log: &log}
	hdr := func(time.Time) (*dada.Header, error) { return dada.ParseHeader([]byte("HDR_VERSION 1.0\n")) }
	o, err := Start(t.Context(), Config{Number: 0, Geometry: placement.Geometry{BlockBytes: 8, SliceBytes: 4}, Writer: w, Blocks: 2,
		Header: hdr, HeaderSize: 4096, Tracker: status.NewTracker(), Last: func(uint64) bool { return false }})
	if err != nil {
		t.Fatal(err)
	}
	o.Window().Open(<-o.Ring().Opened())
	if err := o.Window().LandAt(0, 4); err != nil {
		t.Fatal(err)
	}
	o.Attach(func() error { w.add("queue pairs closed"); return nil })
	lost, err := o.End(false)
	if err != nil || lost != 0 {
		t.Fatalf("End: lost %d, %v", lost, err)
	}
	if want := []string{"queue pairs closed", "header", "filled", "end of data"}; !slices.Equal(log, want) {
		t.Fatalf("ended in the order %q, want %q", log, want)
	}
	if o.Bytes() != 4 || o.Blocks() != 1 {
		t.Fatalf("committed %d bytes in %d blocks, want 4 in 1", o.Bytes(), o.Blocks())
	}
	if err := o.Ring().EndOfData(); err == nil {
		t.Fatal("the ring worker still runs after End")
	}
}
