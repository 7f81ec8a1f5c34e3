//go:build vm

package verbsfabric

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture"
	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/rdma/verbs"
	"github.com/ringcap/ringcap/test/vm/vmtest"
)

// The receiver's calls into C on the real rxe path (issue 38 item 6): an
// observation streamed by `ringcap send` (another process) into a receiver
// engine in this process over this adapter, with one completion queue and
// busy polling as bench-headroom runs it. The binding's count
// (verbs.Crossings) must equal the model pkg/capture/benchfabric repeats with
// no-op crossings: one per Poll (one completion queue) and one per 256 work
// requests of each post. The crossings per message and per block are
// printed (`crossings …=`).
func TestVMCrossingsPerMessage(t *testing.T) {
	vmtest.Require(t)
	bin := vmtest.Binary(t, "ringcap")
	const nbufs, bufsz, msg, qps, total = 8, 4 << 20, 64 << 10, 4, 64 << 20
	for _, mode := range []wire.Mode{wire.ModeSend, wire.ModeWrite} {
		t.Run(mode.String(), func(t *testing.T) {
			key := vmtest.NewRing(t, nbufs, bufsz)
			h := vmtest.ConnectRing(t, key, true)
			rf, err := NewReceiver(fabric.DeviceConfig{Device: vmtest.Device1, Port: vmtest.Port, GIDIndex: 1}, h.Data, WholeRing, quiet)
			if err != nil {
				t.Fatal(err)
			}
			vmtest.Cleanup(t, rf.Close)
			counted := &countingFabric{ReceiverFabric: rf}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			w, err := h.LockWrite(ctx, dada.WriterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			vmtest.Cleanup(t, w.Close)
			cfg := capture.ReceiverConfig{Mode: mode, QPs: qps, MsgBytes: msg, BusyPoll: true, StopObservations: 1,
				Header: capture.ObservationHeaders{Template: []byte("HDR_VERSION 1.0\n"), Size: 4096}}
			rx, err := capture.NewReceiver(cfg, capture.RingGeometryOf(h.Data), capture.DadaWriter{W: w}, counted, nil)
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", net.JoinHostPort(vmtest.IP1, "0"))
			if err != nil {
				t.Fatal(err)
			}
			reader := exec.CommandContext(ctx, bin, "ring", "read", "-k", key.String(), "-s")
			if err := reader.Start(); err != nil {
				t.Fatal(err)
			}
			served := make(chan error, 1)
			before := verbs.Crossings()
			go func() { served <- rx.Serve(ctx, ln) }()
			out, err := exec.CommandContext(ctx, bin, "send", "--connect", ln.Addr().String(), "--bytes", strconv.Itoa(total),
				"--mode", mode.String(), "--qps", strconv.Itoa(qps), "--msg-bytes", strconv.Itoa(msg)).CombinedOutput()
			if err != nil {
				t.Fatalf("send: %v\n%s", err, out)
			}
			if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
				t.Fatalf("receiver: %v", err)
			}
			got := verbs.Crossings() - before
			if err := reader.Wait(); err != nil {
				t.Fatalf("ring read: %v", err)
			}
			c := counted.ep
			if c == nil || c.completions == 0 {
				t.Fatal("the receiver completed nothing")
			}
			if want := c.polls + c.postChunks; got != want {
				t.Errorf("%d crossings, want %d (%d polls of the one completion queue, %d chains of up to 256 posted work requests)",
					got, want, c.polls, c.postChunks)
			}
			msgs, blocks := float64(total/msg), float64(total/bufsz)
			fmt.Printf("crossings recv-%s-64KiB-qps4 per message=%.2f per block=%.1f (polls %d, of them empty %d, posts %d, completions %d; busy poll, rxe)\n",
				mode, float64(got)/msgs, float64(got)/blocks, c.polls, c.emptyPolls, c.postChunks, c.completions)
			fmt.Printf("crossings recv-%s-64KiB-qps4 per completion, empty polls left out=%.3f\n",
				mode, float64(got-c.emptyPolls)/float64(c.completions))
		})
	}
}

// countingFabric counts what its endpoint is asked: polls (and those that
// found nothing), chains of up to 256 posted work requests, completions.
type countingFabric struct {
	fabric.ReceiverFabric
	ep *countingEndpoint
}

func (f *countingFabric) Open(ctx context.Context, cfg fabric.EndpointConfig) (fabric.Endpoint, error) {
	if cfg.CQPerQP {
		return nil, errors.New("the crossing model here has one completion queue")
	}
	ep, err := f.ReceiverFabric.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	f.ep = &countingEndpoint{Endpoint: ep}
	return f.ep, nil
}

type countingEndpoint struct {
	fabric.Endpoint
	polls, emptyPolls, postChunks, completions uint64
}

func chains(n int) uint64 { return uint64((n + 255) / 256) }

func (e *countingEndpoint) PostRecv(qp int, wrs []fabric.RecvWR) error {
	e.postChunks += chains(len(wrs))
	return e.Endpoint.PostRecv(qp, wrs)
}

func (e *countingEndpoint) PostSend(qp int, wrs []fabric.SendWR) error {
	e.postChunks += chains(len(wrs))
	return e.Endpoint.PostSend(qp, wrs)
}

func (e *countingEndpoint) Poll(wcs []fabric.Completion) (int, error) {
	n, err := e.Endpoint.Poll(wcs)
	e.polls++
	if n == 0 {
		e.emptyPolls++
	}
	e.completions += uint64(n)
	return n, err
}
