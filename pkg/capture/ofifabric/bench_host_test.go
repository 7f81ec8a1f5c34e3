//go:build linux && cgo

package ofifabric

import (
	"testing"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/rdma/ofi"
)

// BenchmarkWriteAndPoll is the sender's adapter work per message over
// tcp;ofi_rxm on loopback: one signalled 64-byte write on each of 4
// endpoints in turn, its completion polled, the receiver driven by a
// goroutine of its own. It reports the allocations and the calls into C
// (crossings) per message.
func BenchmarkWriteAndPoll(b *testing.B) {
	const qps = 4
	rep, sep, _, regions, _ := pair(b, qps, 64)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() { // the receiver's side, progressed and its completions dropped
		defer close(done)
		rcs := make([]fabric.Completion, 64)
		for {
			select {
			case <-quit:
				return
			default:
			}
			if _, err := rep.Poll(rcs); err != nil {
				b.Error(err)
				return
			}
		}
	}()
	defer func() { close(quit); <-done }()
	wcs := make([]fabric.Completion, 8)
	wrs := make([]fabric.SendWR, 1)
	b.ReportAllocs()
	b.ResetTimer()
	before := ofi.Crossings()
	for i := range b.N {
		q := i % qps
		wrs[0] = write(q, uint64(i), uint32(i), 64, regions)
		if err := sep.PostSend(q, wrs); err != nil {
			b.Fatal(err)
		}
		for got := 0; got == 0; {
			n, err := sep.Poll(wcs)
			if err != nil {
				b.Fatal(err)
			}
			got = n
		}
	}
	b.ReportMetric(float64(ofi.Crossings()-before)/float64(b.N), "crossings/op")
}
