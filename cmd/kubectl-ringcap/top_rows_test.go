package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

func TestTopRowsSortedWithNamespace(t *testing.T) {
	items := []ringcapv1.RingCapture{
		capture("b", "zeta", time.Hour, ringcapv1.RingCaptureStatus{Phase: "Pending"}),
		capture("a", "pulsar", 10*time.Minute, receivingStatus()),
		capture("b", "alpha", 2*24*time.Hour, ringcapv1.RingCaptureStatus{Phase: "Listening"}),
	}
	rows := topRows(items, true, testNow)
	want := [][]string{
		{"NAMESPACE", "NAME", "PHASE", "RATE", "RECEIVED", "FILL", "SLOWEST READER", "HELD BACK", "LOSS", "OBS", "AGE"},
		{"a", "pulsar", "Receiving", "9.6 Gbit/s", "1.5 GiB", "6/8", "slot 1: 6 blocks (6.0 MiB)", "3s", "-", "2", "10m"},
		{"b", "alpha", "Listening", "-", "-", "-", "-", "0s", "-", "0", "2d"},
		{"b", "zeta", "Pending", "-", "-", "-", "-", "0s", "-", "0", "60m"},
	}
	if !slices.EqualFunc(rows, want, slices.Equal) {
		t.Errorf("rows\n%q\nwant\n%q", rows, want)
	}
	if items[0].Name != "zeta" {
		t.Error("topRows sorted its argument in place")
	}
}

func TestTopRowsWithoutNamespace(t *testing.T) {
	rows := topRows([]ringcapv1.RingCapture{capture("a", "pulsar", time.Minute, receivingStatus())}, false, testNow)
	if rows[0][0] != "NAME" || rows[1][0] != "pulsar" || len(rows[1]) != len(topHeader) {
		t.Errorf("rows %q: want NAME first and %d columns", rows, len(topHeader))
	}
}

// A packet capture's row shows its loss; an RDMA capture's and one before its first
// packet show none.
func TestTopRowsLoss(t *testing.T) {
	before := ringcapv1.RingCaptureStatus{Phase: "Listening", Packets: &ringcapv1.PacketStatus{Protocol: "vdif"}}
	rows := topRows([]ringcapv1.RingCapture{
		capture("a", "beam", time.Minute, packetStatus()),
		capture("a", "early", time.Minute, before),
		capture("a", "pulsar", time.Minute, receivingStatus()),
	}, false, testNow)
	col := slices.Index(topHeader, "LOSS")
	for i, want := range []string{"17.86%", "-", "-"} {
		if got := rows[i+1][col]; got != want {
			t.Errorf("%s: LOSS %q, want %q", rows[i+1][0], got, want)
		}
	}
}

func TestSlowestReader(t *testing.T) {
	slot := func(n int32, connected bool, lag int32) ringcapv1.ReaderSlotStatus {
		return ringcapv1.ReaderSlotStatus{Slot: n, Connected: connected, LagBlocks: lag, LagBytes: int64(lag) << 20}
	}
	for _, tc := range []struct {
		name string
		ring *ringcapv1.RingFillStatus
		want string
	}{
		{"no ring", nil, "-"},
		{"no readers", &ringcapv1.RingFillStatus{Blocks: 8}, "-"},
		{"largest lag", &ringcapv1.RingFillStatus{Readers: []ringcapv1.ReaderSlotStatus{slot(0, true, 2), slot(1, true, 6), slot(2, false, 3)}},
			"slot 1: 6 blocks (6.0 MiB)"},
		{"one block", &ringcapv1.RingFillStatus{Readers: []ringcapv1.ReaderSlotStatus{slot(0, true, 1)}}, "slot 0: 1 block (1.0 MiB)"},
		{"empty slot behind", &ringcapv1.RingFillStatus{Readers: []ringcapv1.ReaderSlotStatus{slot(0, true, 2), slot(1, false, 7)}},
			"slot 1: empty"},
		{"tie goes to the empty slot", &ringcapv1.RingFillStatus{Readers: []ringcapv1.ReaderSlotStatus{slot(0, true, 4), slot(1, false, 4)}},
			"slot 1: empty"},
		{"tie goes to the lower slot", &ringcapv1.RingFillStatus{Readers: []ringcapv1.ReaderSlotStatus{slot(0, true, 0), slot(1, true, 0)}},
			"slot 0: 0 blocks (0 B)"},
	} {
		if got := slowestReader(tc.ring); got != tc.want {
			t.Errorf("%s: slowestReader = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestFill(t *testing.T) {
	if got := fill(&ringcapv1.RingFillStatus{FilledBlocks: 3, Blocks: 8}); got != "3/8" {
		t.Errorf("fill without status.ring.fill = %q, want 3/8", got)
	}
	if got := fill(&ringcapv1.RingFillStatus{FilledBlocks: 3, Blocks: 8, Fill: "3/8"}); got != "3/8" {
		t.Errorf("fill = %q, want 3/8", got)
	}
}

func TestIECBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 6 << 20: "6.0 MiB", 1536 << 20: "1.5 GiB", 3 << 40: "3.0 TiB"} {
		if got := iecBytes(n); got != want {
			t.Errorf("iecBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestWriteTableAligns(t *testing.T) {
	var b bytes.Buffer
	if err := writeTable(&b, [][]string{{"NAME", "PHASE"}, {"a-long-name", "Receiving"}}); err != nil {
		t.Fatal(err)
	}
	want := "NAME          PHASE\na-long-name   Receiving\n"
	if b.String() != want {
		t.Errorf("table\n%s\nwant\n%s", b.String(), want)
	}
	if strings.Contains(b.String(), "\t") {
		t.Error("table has tabs")
	}
}
