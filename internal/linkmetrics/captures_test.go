package linkmetrics

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ringcap/ringcap/internal/controller"
	"github.com/ringcap/ringcap/pkg/rdma"
)

const captureHeader = `
# HELP ringcap_capture_link_increase_total A counter of an RDMA port a pod holds, counted from when the pod was first seen holding it (the device plugin) or its claim was prepared (the DRA driver); capture is the pod's ringcap.io/capture label, empty without one.
# TYPE ringcap_capture_link_increase_total counter
`

// A hold counts from when it was first set: growth after that shows, a counter that went
// down counts from zero, setting the same hold again keeps its baseline (and takes a
// capture label learnt later), and a dropped hold's series are gone.
func TestCaptureCollectorCountsFromTheHold(t *testing.T) {
	t.Parallel()
	sys := t.TempDir()
	hw := filepath.Join(sys, "class/infiniband/rxe0/ports/1/hw_counters")
	write(t, filepath.Join(hw, "rcvd_pkts"), "1000\n")
	write(t, filepath.Join(hw, "rcvd_seq_err"), "50\n")
	c := NewCaptureCollector(rdma.Roots{Sys: sys})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	rx := Hold{Holder: Holder{Namespace: "obs", Pod: "cap-0"}, Port: Port{"rxe0", 1}}
	c.Set("obs/cap-0", []Hold{rx, rx})

	write(t, filepath.Join(hw, "rcvd_pkts"), "1300\n")
	write(t, filepath.Join(hw, "rcvd_seq_err"), "4\n") // the driver reset it
	want := captureHeader + `ringcap_capture_link_increase_total{capture="",counter="rcvd_pkts",device="rxe0",namespace="obs",pod="cap-0",port="1",source="hw_counters"} 300
ringcap_capture_link_increase_total{capture="",counter="rcvd_seq_err",device="rxe0",namespace="obs",pod="cap-0",port="1",source="hw_counters"} 4
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}

	rx.Capture = "burst"
	c.Set("obs/cap-0", []Hold{rx})
	write(t, filepath.Join(hw, "rcvd_pkts"), "1500\n")
	want = captureHeader + `ringcap_capture_link_increase_total{capture="burst",counter="rcvd_pkts",device="rxe0",namespace="obs",pod="cap-0",port="1",source="hw_counters"} 500
ringcap_capture_link_increase_total{capture="burst",counter="rcvd_seq_err",device="rxe0",namespace="obs",pod="cap-0",port="1",source="hw_counters"} 4
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatalf("after the hold was set again: %v", err)
	}
	if got := c.Owners(); len(got) != 1 || got[0] != "obs/cap-0" {
		t.Fatalf("Owners = %v", got)
	}
	c.Drop("obs/cap-0")
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
		t.Fatalf("after Drop: %d series, %v", n, err)
	}
}

// A port whose counters cannot be read yet has no series; its baseline is taken at the
// first scrape that can read them, and the growth after that shows. Two owners holding
// the same pod's port send its series once.
func TestCaptureCollectorBaselinesLateAndOnce(t *testing.T) {
	t.Parallel()
	sys := t.TempDir()
	c := NewCaptureCollector(rdma.Roots{Sys: sys})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	h := Hold{Holder: Holder{Namespace: "obs", Pod: "cap-0", Capture: "c"}, Port: Port{"rxe1", 1}}
	c.Set("claim-a", []Hold{h})
	c.Set("claim-b", []Hold{h})
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
		t.Fatalf("a port that does not exist: %d series, %v", n, err)
	}
	hw := filepath.Join(sys, "class/infiniband/rxe1/ports/1/hw_counters")
	write(t, filepath.Join(hw, "rcvd_pkts"), "7\n")
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
		t.Fatalf("the scrape that took the baseline: %d series, %v", n, err)
	}
	write(t, filepath.Join(hw, "rcvd_pkts"), "10\n")
	want := captureHeader + `ringcap_capture_link_increase_total{capture="c",counter="rcvd_pkts",device="rxe1",namespace="obs",pod="cap-0",port="1",source="hw_counters"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

// The capture label is the operator's.
func TestLabelCaptureIsTheOperators(t *testing.T) {
	t.Parallel()
	if LabelCapture != controller.LabelCapture {
		t.Fatalf("LabelCapture %q, the operator's %q", LabelCapture, controller.LabelCapture)
	}
}
