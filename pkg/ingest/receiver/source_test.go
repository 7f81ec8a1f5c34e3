package receiver

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/ingest/udp"
)

// fakeSockets hands n packets to the handler from each of k goroutines, then
// waits for Close.
type fakeSockets struct {
	k, n   int
	closed chan struct{}
	once   sync.Once
}

func (f *fakeSockets) Run(h udp.Handler) error {
	var wg sync.WaitGroup
	for i := range f.k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range f.n {
				h(udp.Packet{Data: []byte{byte(i)}, Socket: i})
			}
		}()
	}
	wg.Wait()
	<-f.closed
	return nil
}

func (f *fakeSockets) Close() error {
	f.once.Do(func() { close(f.closed) })
	return nil
}

// Packets of several sockets are handed on one at a time; ctx closes the
// sockets, which ends Run.
func TestUDPSourceOneAtATime(t *testing.T) {
	f := &fakeSockets{k: 4, n: 1000, closed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	var in, total atomic.Int64
	done := make(chan error, 1)
	go func() {
		done <- udpSource{r: f, shared: true}.Run(ctx, func([]byte) {
			if in.Add(1) != 1 {
				t.Error("two handlers at once")
			}
			total.Add(1)
			in.Add(-1)
		})
	}()
	for total.Load() < 4000 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
