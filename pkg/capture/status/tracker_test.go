package status

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/testio"
)

// The rate gauge is current for a scrape of /metrics alone: nothing else
// needs to read /status for it to move.
func TestRateGaugeMovesWithScrapesAlone(t *testing.T) {
	tr := NewTracker()
	srv := httptest.NewServer(tr.Handler())
	defer srv.Close()
	if r := testio.Metric(t, srv.URL, "ringcap_recv_rate_bytes_per_second"); r != 0 {
		t.Fatalf("rate %g before anything arrived", r)
	}
	qpc := tr.QueuePairs(1)
	qpc[0].Add(4000)
	tr.Landed(qpc)
	tr.mu.Lock()
	tr.rateAt = tr.rateAt.Add(-2 * time.Second) // the first scrape was two seconds ago
	tr.mu.Unlock()
	if r := testio.Metric(t, srv.URL, "ringcap_recv_rate_bytes_per_second"); r <= 0 || r > 4000 {
		t.Fatalf("rate %g after 4000 bytes in the two seconds since the last scrape: want about 2000", r)
	}
}
