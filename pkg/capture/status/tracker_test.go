package status

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The rate gauge is current for a scrape of /metrics alone: nothing else
// needs to read /status for it to move.
func TestRateGaugeMovesWithScrapesAlone(t *testing.T) {
	tr := NewTracker()
	srv := httptest.NewServer(tr.Handler())
	defer srv.Close()
	if r := getMetric(t, srv.URL, "ringcap_recv_rate_bytes_per_second"); r != 0 {
		t.Fatalf("rate %g before anything arrived", r)
	}
	qpc := tr.QueuePairs(1)
	qpc[0].Add(4000)
	tr.Landed(qpc)
	tr.mu.Lock()
	tr.rateAt = tr.rateAt.Add(-2 * time.Second) // the first scrape was two seconds ago
	tr.mu.Unlock()
	if r := getMetric(t, srv.URL, "ringcap_recv_rate_bytes_per_second"); r <= 0 || r > 4000 {
		t.Fatalf("rate %g after 4000 bytes in the two seconds since the last scrape: want about 2000", r)
	}
}

// getMetric reads metric name from url's /metrics.
func getMetric(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %v", name, err)
			}
			return f
		}
	}
	t.Fatalf("no metric %s on /metrics", name)
	return 0
}
