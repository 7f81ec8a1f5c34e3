package capture

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/endpoint"
	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/memfabric"
	"github.com/ringcap/ringcap/pkg/capture/sender"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/rdma"
	"github.com/ringcap/ringcap/pkg/rdma/rdmatest"
	"k8s.io/component-base/metrics/testutil"
)

// syntheticRoots is a sysfs and /dev with one Soft-RoCE-like device
// (rdmatest.Synthetic): the devices Run chooses its endpoint from in host
// tests.
func syntheticRoots(t *testing.T) rdma.Roots {
	t.Helper()
	sys, dev, err := rdmatest.Synthetic(t.TempDir(), 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	return rdma.Roots{Sys: sys, Dev: dev}
}

// noEnv is an environment without the device plugin's variables.
func noEnv(string) string { return "" }

// runCapture starts Run over the in-memory fabric n and returns its tracker
// and result channel once it listens.
func runCapture(t *testing.T, c Capture, n *memfabric.Net) (*Tracker, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return runCaptureContext(t, ctx, c, n)
}

// runCaptureContext is runCapture with the caller's context (its cancel is a
// SIGINT/SIGTERM to the run).
func runCaptureContext(t *testing.T, ctx context.Context, c Capture, n *memfabric.Net) (*Tracker, <-chan error) {
	t.Helper()
	c.Status = NewTracker()
	if c.Roots.Sys == "" {
		c.Roots = syntheticRoots(t)
	}
	c.Open = func(_ fabric.DeviceConfig, ring *dada.Ring) (fabric.ReceiverFabric, error) {
		blocks := make([][]byte, ring.NBufs())
		for i := range blocks {
			blocks[i] = ring.Block(i)
		}
		return memfabric.NewReceiver(n, blocks, wire.MRWholeRing), nil
	}
	errc := make(chan error, 1)
	go func() { errc <- Run(ctx, c) }()
	deadline := time.Now().Add(30 * time.Second)
	for s := c.Status.Snapshot(); s.State != statusdoc.StateListening; s = c.Status.Snapshot() {
		if time.Now().After(deadline) || s.State == statusdoc.StateFailed {
			t.Fatalf("Run did not listen: %+v", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return c.Status, errc
}

// Run owns the receiver's wiring: it chooses the endpoint, opens the fabric
// over the ring, becomes its writer, serves a sender until the stop
// condition, and leaves the final state in the summary.
func TestRunServesASenderIntoTheRing(t *testing.T) {
	h := testRing(t, 4, 8192)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reads := readObservations(t, ctx, h, 1, 5, 0)
	summary := filepath.Join(t.TempDir(), "summary.json")
	n := memfabric.NewNet()
	tr, errc := runCapture(t, Capture{
		Ring: dada.Config{Key: h.Key()}, Listen: endpoint.Listen{Addr: "127.0.0.1:0"}, Device: endpoint.Request{GIDIndex: -1}, Getenv: noEnv,
		Receiver:    ReceiverConfig{Mode: wire.ModeWrite, QPs: 2, MsgBytes: 2048, StopObservations: 1, Header: ObservationHeaders{Template: []byte("HDR_VERSION 1.0\n")}},
		SummaryFile: summary,
	}, n)
	ep := tr.Snapshot().Endpoint
	if ep.Device == "" || ep.GIDIndex == nil || ep.Port == 0 {
		t.Fatalf("endpoint while listening: %+v", ep)
	}
	cfg := sender.Config{Mode: wire.ModeWrite, QPs: 2, MsgBytes: 2048, Bytes: 50000, Source: sender.PatternSource{Seed: 5}}
	res, err := sender.Send(ctx, "127.0.0.1:"+strconv.Itoa(ep.Port), cfg, memfabric.NewSender(n, make([]byte, sender.SendBufferBytes(cfg))))
	if err != nil || !res.Complete {
		t.Fatalf("send: %+v %v", res, err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if obs := <-reads; len(obs) != 1 || obs[0].bytes != 50000 || obs[0].mismatches != 0 || obs[0].err != nil {
		t.Fatalf("reader %+v", obs)
	}
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	var st statusdoc.Status
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if st.State != statusdoc.StateFinished || st.BytesReceived != 50000 || !st.Ring.Ready || st.Endpoint.Device != ep.Device {
		t.Fatalf("summary %s", b)
	}
}

// A ring Run creates is gone when Run returns, and a run that cannot start
// says why in its final state.
func TestRunDestroysTheRingItCreatedAndReportsFailure(t *testing.T) {
	key := reserveKey()
	tr := NewTracker()
	err := Run(context.Background(), Capture{
		Ring: dada.Config{Key: key, NBufs: 2, BufSize: 4096, HeaderBufSize: 4096, Readers: 1}, Create: true,
		Listen: endpoint.Listen{Addr: "127.0.0.1:0"}, Device: endpoint.Request{Device: "mlx5_9", GIDIndex: -1}, Getenv: noEnv, Roots: syntheticRoots(t),
		Receiver: ReceiverConfig{Mode: wire.ModeSend, QPs: 1, MsgBytes: 1024},
		Status:   tr,
	})
	if err == nil || !strings.Contains(err.Error(), `RDMA device "mlx5_9" not found`) {
		t.Fatalf("Run with a missing device: %v", err)
	}
	if s := tr.Snapshot(); s.State != statusdoc.StateFailed || !strings.Contains(s.Message, "mlx5_9") || !s.Ring.Ready {
		t.Fatalf("final status %+v", s)
	}
	if _, err := dada.Connect(key, dada.ConnectOptions{}); !errors.Is(err, dada.ErrNoRing) {
		t.Fatalf("ring %s after Run: %v, want it destroyed", key, err)
	}
}

// The receiver exports the counters of the port it uses, counted from its start: what
// the link did during this capture.
func TestRunExportsItsPortsLinkCountersFromItsStart(t *testing.T) {
	roots := syntheticRoots(t)
	hw := filepath.Join(roots.Sys, "class/infiniband/synth0/ports/1/hw_counters/duplicate_request")
	if err := os.MkdirAll(filepath.Dir(hw), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hw, []byte("40\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := testRing(t, 4, 8192)
	tr, _ := runCapture(t, Capture{
		Ring: dada.Config{Key: h.Key()}, Roots: roots, Listen: endpoint.Listen{Addr: "127.0.0.1:0"}, Device: endpoint.Request{GIDIndex: -1},
		Getenv: noEnv, Receiver: ReceiverConfig{Mode: wire.ModeWrite, QPs: 1, MsgBytes: 2048, Header: ObservationHeaders{Template: []byte("HDR_VERSION 1.0\n")}},
	}, memfabric.NewNet())
	if ep := tr.Snapshot().Endpoint; ep.Device != "synth0" || ep.IBPort != 1 {
		t.Fatalf("endpoint %+v: want synth0 port 1", ep)
	}
	if err := os.WriteFile(hw, []byte("43\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP ringcap_recv_link_increase_total A counter of the RDMA port this receiver uses, counted from when the capture started (sysfs counters or hw_counters; the device plugin exports the node's totals).
# TYPE ringcap_recv_link_increase_total counter
ringcap_recv_link_increase_total{counter="duplicate_request",device="synth0",port="1",source="hw_counters"} 3
`
	if err := testutil.GatherAndCompare(tr.Gatherer(), strings.NewReader(want), "ringcap_recv_link_increase_total"); err != nil {
		t.Fatal(err)
	}
}
