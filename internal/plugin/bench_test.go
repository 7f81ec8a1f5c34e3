package plugin

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/ringcap/ringcap/pkg/rdma"
	"github.com/ringcap/ringcap/pkg/rdma/rdmatest"
)

// BenchmarkPropagation measures how long a port-state change takes to reach a
// ListAndWatch client (flip a port of one of 8 synthetic devices, wait for the
// response that shows it), with the default rescan interval. Anchors from the same
// run: the rescan interval (x-interval = latency / interval; changes happen at a
// random phase of the polling, so the mean is about half an interval plus one scan,
// the worst case one interval plus one scan) and the mean scan time (scan-ms).
func BenchmarkPropagation(b *testing.B) {
	dir := b.TempDir()
	sys, dev, err := rdmatest.Synthetic(dir, 8, 256)
	if err != nil {
		b.Fatal(err)
	}
	kdir := b.TempDir()
	if len(filepath.Join(kdir, "ringcap-rdma.sock")) > 100 {
		b.Skip("temp dir path too long for a unix socket")
	}
	k := &fakeKubelet{dir: kdir, regs: make(chan *pluginapi.RegisterRequest, 16)}
	startKubeletOn(b, k)
	cfg := DefaultConfig()
	p, err := New(Options{Config: cfg, Roots: rdma.Roots{Sys: sys, Dev: dev}, KubeletDir: kdir})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	var r *pluginapi.RegisterRequest
	select {
	case r = <-k.regs:
	case <-time.After(wait):
		b.Fatal("no registration")
	}
	conn, c := dialPlugin(b, kdir, r.Endpoint)
	defer func() { _ = conn.Close() }()
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	stream, err := c.ListAndWatch(sctx, &pluginapi.Empty{})
	if err != nil {
		b.Fatal(err)
	}
	healthOf := func(id string) string {
		for {
			resp, err := stream.Recv()
			if err != nil {
				b.Fatal(err)
			}
			for _, d := range resp.Devices {
				if d.ID == id {
					return d.Health
				}
			}
		}
	}
	if h := healthOf("synth3"); h != pluginapi.Healthy {
		b.Fatalf("synth3 %s", h)
	}
	var total time.Duration
	state := []string{"DOWN", "ACTIVE"}
	want := []string{pluginapi.Unhealthy, pluginapi.Healthy}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Change at a random phase of the rescan ticker, as real changes happen.
		b.StopTimer()
		time.Sleep(time.Duration(rand.Int64N(int64(cfg.RescanInterval.Duration))))
		b.StartTimer()
		start := time.Now()
		rdmatest.SetPortState(b, sys, "synth3", 1, state[i%2])
		for healthOf("synth3") != want[i%2] {
		}
		total += time.Since(start)
	}
	b.StopTimer()
	lat := total / time.Duration(b.N)
	scans := timeIt(5, func() {
		if _, _, err := rdma.Discover(rdma.Roots{Sys: sys, Dev: dev}); err != nil {
			b.Fatal(err)
		}
	})
	b.ReportMetric(float64(lat)/float64(time.Millisecond), "ms/change")
	b.ReportMetric(float64(lat)/float64(cfg.RescanInterval.Duration), "x-interval")
	b.ReportMetric(float64(scans)/float64(time.Millisecond), "scan-ms")
	b.Logf("propagation: mean %v over %d changes, rescan interval %v, scan %v", lat, b.N, cfg.RescanInterval.Duration, scans)
}

func timeIt(reps int, f func()) time.Duration {
	start := time.Now()
	for i := 0; i < reps; i++ {
		f()
	}
	return time.Since(start) / time.Duration(reps)
}
