package capture

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/sender"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// In send mode the sender sends a slice only once the receiver has posted
// its receive: a reader that holds a ring block mid-stream holds the sender
// back, but no SEND finds its queue pair without a receive WR (on RC a
// receiver-not-ready NAK and a retry every RNR timer), and every byte lands.
func TestSendModeNeverOutrunsPostedReceives(t *testing.T) {
	const nbufs, bufsz, msg = 8, 64 << 10, 4 << 10
	const total = 6*nbufs*bufsz + 5
	for _, tc := range []struct{ qps, rxDepth, txDepth int }{{4, 8, 0}, {1, 2, 4}, {3, 0, 64}} {
		t.Run(fmt.Sprintf("qps%d-rx%d-tx%d", tc.qps, tc.rxDepth, tc.txDepth), func(t *testing.T) {
			h := testRing(t, nbufs, bufsz)
			hs := startReceiver(t, h, ReceiverConfig{Mode: wire.ModeSend, QPs: tc.qps, MsgBytes: msg, RxDepth: tc.rxDepth, StopObservations: 1}, wire.MRWholeRing)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			// The reader holds the observation's third block for a while:
			// the ring fills behind it and the receiver is held back.
			reads := readPaced(t, ctx, h, 1, 11, func(b int) time.Duration {
				if b == 2 {
					return 300 * time.Millisecond
				}
				return 0
			})
			res, err := hs.send(ctx, sender.Config{Mode: wire.ModeSend, QPs: tc.qps, MsgBytes: msg, Bytes: total, TxDepth: tc.txDepth, Source: sender.PatternSource{Seed: 11}})
			if err != nil || !res.Complete || res.Bytes != total {
				t.Fatalf("send %+v: %v", res, err)
			}
			waitObservations(t, hs, reads, total)
			if st := hs.rx.Tracker().Snapshot(); st.HeldBackSeconds <= 0 {
				t.Fatalf("the reader's hold did not hold the receiver back: %+v", st)
			}
			if n := hs.net.RNR(); n != 0 {
				t.Fatalf("%d SENDs found no receive posted on their queue pair", n)
			}
		})
	}
}
