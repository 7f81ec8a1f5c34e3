package capture

import (
	"bytes"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/pkg/capture/endpoint"
	"github.com/ringcap/ringcap/pkg/rdma"
)

// In a pod's network namespace the device's sysfs entry has a port but no counters: the
// receiver says so (naming the node's counters instead) and exports no empty family.
func TestWatchLinkPortWithoutCounters(t *testing.T) {
	roots := rdma.Roots{Sys: t.TempDir(), Dev: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(roots.Sys, "class/infiniband/rxe0/ports/1"), 0o755); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	tr := NewTracker()
	watchLink(tr, roots, &endpoint.Chosen{Device: "rxe0", Port: 1}, slog.New(slog.NewTextHandler(&logs, nil)))
	if !strings.Contains(logs.String(), "the port has no counters here") || !strings.Contains(logs.String(), "ringcap_link_counter_total") {
		t.Fatalf("log %q", logs.String())
	}
	rec := httptest.NewRecorder()
	tr.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if strings.Contains(rec.Body.String(), "ringcap_recv_link_increase_total") {
		t.Fatal("a port without counters exports the family anyway")
	}
}
