package controller

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ringcap/ringcap/pkg/capture"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

// fillTracker sets every field a receiver sets through its tracker (the derived
// ones, held-back time and rate, are the tracker's own).
func fillTracker(tr *capture.Tracker, state string) {
	tr.Update(func(s *statusdoc.Status) {
		gid := 1
		s.Ring = statusdoc.Ring{Key: "dada", Ready: true, Blocks: 8, BlockBytes: 1 << 20, Readers: 2}
		s.Endpoint = statusdoc.Endpoint{Address: "198.18.0.1", Port: 18515, Device: "rxe0", IBPort: 1, GIDIndex: &gid,
			GID: "::ffff:198.18.0.1", Netdev: "eth0", GIDReason: "IPv4-mapped"}
		s.MemoryRegistration = statusdoc.MemoryRegistration{Mode: "PerBlock", Regions: 8, Bytes: 8 << 20, Reason: "blocks not contiguous"}
		s.QueuePairs, s.TransferMode, s.BusyPoll = 4, "write", true
		s.BytesReceived, s.BlocksFilled, s.Observations, s.IncompleteObs, s.CompletionErrors = 3<<20, 3, 2, 1, 1
		s.HeldBackSince = "2026-11-21T15:00:00.5Z"
		s.Header = map[string]string{"SOURCE": "J0437-4715", "RINGCAP_OBSERVATION": "1"}
		s.Seconds, s.Gbps = 2, 0.0125
		s.LastObservation = &statusdoc.Observation{Number: 1, Bytes: 2 << 20, Blocks: 2, Seconds: 1, Gbps: 0.0168, Complete: false, Message: "sender went away"}
	})
	tr.ObservationBegan(2) // currentObservation, with no bytes and no UTC_START yet
	tr.SetState(state, "state "+state)
}

// The receiver's /status, as its tracker serves it, parses in the operator to the
// status the tracker holds, in every state.
func TestReceiverStatusRoundTrip(t *testing.T) {
	for _, state := range []string{statusdoc.StateStarting, statusdoc.StateListening, statusdoc.StateReceiving, statusdoc.StateFinished, statusdoc.StateFailed} {
		tr := capture.NewTracker()
		fillTracker(tr, state)
		srv := httptest.NewServer(tr.Handler())
		resp, err := srv.Client().Get(srv.URL + "/status")
		if err != nil {
			srv.Close()
			t.Fatalf("get /status: %v", err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		srv.Close()
		if err != nil {
			t.Fatalf("read /status: %v", err)
		}
		got, err := statusdoc.Parse(body)
		if err != nil {
			t.Fatalf("%s: operator cannot parse the receiver's /status: %v\n%s", state, err, body)
		}
		if want := tr.Snapshot(); !reflect.DeepEqual(*got, want) {
			t.Errorf("%s: operator parsed\n%+v\nreceiver has\n%+v", state, *got, want)
		}
	}
}

// Before the endpoint is chosen the receiver reports GID index 0, and the operator
// reads it as present (as it always has).
func TestReceiverStatusStartingGIDIndex(t *testing.T) {
	b, err := json.Marshal(capture.NewTracker().Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	st, err := statusdoc.Parse(b)
	if err != nil || st.Endpoint.GIDIndex == nil || *st.Endpoint.GIDIndex != 0 {
		t.Errorf("starting receiver's status %s parsed as %+v, %v; want gidIndex 0", b, st, err)
	}
}

// The summary file the receiver writes parses in the operator to the receiver's
// status, and the operator's document written out again is the same file.
func TestReceiverSummaryRoundTrip(t *testing.T) {
	tr := capture.NewTracker()
	fillTracker(tr, statusdoc.StateFinished)
	path := filepath.Join(t.TempDir(), "summary.json")
	if err := tr.WriteSummary(path); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := statusdoc.Parse(file)
	if err != nil {
		t.Fatalf("operator cannot parse the receiver's summary: %v\n%s", err, file)
	}
	if want := tr.Snapshot(); !reflect.DeepEqual(*got, want) {
		t.Errorf("operator parsed\n%+v\nreceiver has\n%+v", *got, want)
	}
	back, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if string(append(back, '\n')) != string(file) {
		t.Errorf("operator's document written out:\n%s\nreceiver's summary file:\n%s", back, file)
	}
}
