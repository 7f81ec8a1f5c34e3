package status

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/testio"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
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

// SetLive brings the status up to date at each snapshot: bytes (and so the
// observation's bytes) and the packets section, copied out.
func TestSetLive(t *testing.T) {
	tr := NewTracker()
	var n uint64
	tr.SetLive(func(s *statusdoc.Status) {
		n += 10
		s.BytesReceived = n
		s.Packets = &statusdoc.Packets{Protocol: "vdif", Packets: n}
	})
	tr.ObservationBegan(1)
	s := tr.Snapshot()
	if s.BytesReceived != 10 || s.Packets == nil || s.Packets.Packets != 10 || s.CurrentObservation == nil || s.CurrentObservation.Bytes != 10 {
		t.Fatalf("snapshot %+v (packets %+v, current %+v)", s, s.Packets, s.CurrentObservation)
	}
	s.Packets.Packets = 0
	tr.SetLive(nil)
	if s2 := tr.Snapshot(); s2.Packets.Packets != 10 || s2.BytesReceived != 10 {
		t.Fatalf("after SetLive(nil): %+v", s2.Packets)
	}
}
