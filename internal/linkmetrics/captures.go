package linkmetrics

import (
	"sort"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringcap/ringcap/pkg/rdma"
)

// LabelCapture is the label the operator puts on a capture's pod (and the pod's claim
// template) with the RingCapture's name: the capture label of the per-capture series.
const LabelCapture = "ringcap.io/capture"

var captureDesc = prometheus.NewDesc("ringcap_capture_link_increase_total",
	"A counter of an RDMA port a pod holds, counted from when the pod was first seen holding it (the device plugin) or its claim was prepared (the DRA driver); capture is the pod's ringcap.io/capture label, empty without one.",
	[]string{"namespace", "pod", "capture", "device", "port", "source", "counter"}, nil)

// Holder is a pod that holds ports: the labels of its series.
type Holder struct {
	Namespace, Pod string
	Capture        string // the pod's LabelCapture; "" without one
}

// Hold is a port a pod holds.
type Hold struct {
	Holder
	Port Port
}

// holdKey identifies a hold's series (the capture label aside, which may be learnt late).
type holdKey struct {
	namespace, pod string
	port           Port
}

func (h Hold) key() holdKey { return holdKey{h.Namespace, h.Pod, h.Port} }

// held is a hold and its baseline (nil until the port's counters could be read).
type held struct {
	hold Hold
	base *Baseline
}

// CaptureCollector exports the counters of the ports pods hold, each counted from when
// its hold was first set: per capture, what its link did, read from the node's sysfs
// where a pod's own network namespace shows none. Holds are grouped by owner (a pod for
// the device plugin, a claim for the DRA driver), set and dropped together.
type CaptureCollector struct {
	roots rdma.Roots

	mu     sync.Mutex
	owners map[string]map[holdKey]*held
}

// NewCaptureCollector exports the holds' counters under roots.
func NewCaptureCollector(roots rdma.Roots) *CaptureCollector {
	return &CaptureCollector{roots: roots, owners: map[string]map[holdKey]*held{}}
}

// Set makes holds the owner's holds: a hold it had already keeps its baseline (and takes
// the new capture label), a new one gets a baseline read now, and one not in holds is
// dropped with its series.
func (c *CaptureCollector) Set(owner string, holds []Hold) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.owners[owner]
	now := make(map[holdKey]*held, len(holds))
	for _, h := range holds {
		k := h.key()
		if x, ok := now[k]; ok {
			x.hold = h
			continue
		}
		x, ok := old[k]
		if !ok {
			x = &held{}
		}
		x.hold = h
		c.ensureBase(x)
		now[k] = x
	}
	c.owners[owner] = now
}

// Drop removes the owner's holds and their series.
func (c *CaptureCollector) Drop(owner string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.owners, owner)
}

// Owners are the owners with holds set, sorted.
func (c *CaptureCollector) Owners() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sortedOwnersLocked()
}

// ensureBase reads the baseline of a hold that has none yet (its port's counters could
// not be read before); c.mu is held.
func (c *CaptureCollector) ensureBase(x *held) {
	if x.base != nil {
		return
	}
	if b, err := NewBaseline(c.roots, x.hold.Port); err == nil {
		x.base = b
	}
}

// Describe sends the descriptor.
func (c *CaptureCollector) Describe(ch chan<- *prometheus.Desc) { ch <- captureDesc }

// Collect reads each held port's counters now and sends their growth since the hold's
// baseline; a hold without one yet gets it now and sends nothing this time. A series two
// owners both hold is sent once.
func (c *CaptureCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sent := map[holdKey]bool{}
	for _, owner := range c.sortedOwnersLocked() {
		for k, x := range c.owners[owner] {
			if sent[k] {
				continue
			}
			sent[k] = true
			if x.base == nil {
				c.ensureBase(x)
				continue
			}
			c.collectHold(ch, x)
		}
	}
}

func (c *CaptureCollector) sortedOwnersLocked() []string {
	out := make([]string, 0, len(c.owners))
	for o := range c.owners {
		out = append(out, o)
	}
	sort.Strings(out)
	return out
}

func (c *CaptureCollector) collectHold(ch chan<- prometheus.Metric, x *held) {
	cs, err := x.base.Deltas(c.roots)
	if err != nil {
		return
	}
	h := x.hold
	port := strconv.Itoa(h.Port.Port)
	for _, ct := range cs {
		ch <- prometheus.MustNewConstMetric(captureDesc, prometheus.CounterValue, float64(ct.Value),
			h.Namespace, h.Pod, h.Capture, h.Port.Device, port, ct.Source, ct.Name)
	}
}
