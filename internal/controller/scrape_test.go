package controller

import "testing"

// A capture pod carries the scrape annotations of its receiver's metrics port, for a
// Prometheus that discovers pods by annotation.
func TestBuildPodScrapeAnnotations(t *testing.T) {
	t.Parallel()
	rc := defaulted("x")
	rc.Spec.Receiver.MetricsPort = 9300
	a := BuildPod(rc, DefaultPodOptions()).Annotations
	if a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != "9300" || a["prometheus.io/path"] != "/metrics" {
		t.Errorf("capture pod annotations %v: want prometheus.io/scrape true, port 9300, path /metrics", a)
	}
}
