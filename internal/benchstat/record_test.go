package benchstat

import (
	"bytes"
	"strings"
	"testing"
)

func TestRecordsRoundTrip(t *testing.T) {
	t.Parallel()
	rs := []Record{
		{Metric: "ratio a/b", Figure: "1.0", Low: "0.9", High: "1.1", Anchor: "b", Goal: "≥ 0.9", Date: "2026-11-28", Commit: "abc1234", Machine: "host", Command: "make bench-x", Note: "met"},
		{Metric: "ratio c/d", Figure: "2", Command: `A="1 2" make bench-y`, Note: "tab\there, line\nbreak"},
	}
	var b bytes.Buffer
	if err := WriteRecords(&b, rs); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRecords(&b)
	if err != nil {
		t.Fatal(err)
	}
	rs[1].Note = "tab here, line break"
	if len(got) != 2 || got[0] != rs[0] || got[1] != rs[1] {
		t.Fatalf("read back %+v, wrote %+v", got, rs)
	}
}

func TestReadRecordsRefusesBadFiles(t *testing.T) {
	t.Parallel()
	for name, text := range map[string]string{
		"empty":      "",
		"no header":  "ratio a/b\t1\t\t\t\t\t\t\t\t\t\n",
		"short line": strings.Join(RecordColumns, "\t") + "\nratio a/b\t1\n",
	} {
		if _, err := ReadRecords(strings.NewReader(text)); err == nil {
			t.Errorf("%s: read without an error", name)
		}
	}
}

func TestUpsert(t *testing.T) {
	t.Parallel()
	rs := []Record{
		{Metric: "ratio a/b", Figure: "1", Goal: "≥ 1", Anchor: "b", Command: "x"},
		{Metric: "ratio c/d", Figure: "2", Command: "y"},
	}
	rs = Upsert(rs, Record{Metric: "ratio a/b", Figure: "3", Command: "x", Note: "new"})
	if rs[0].Figure != "3" || rs[0].Goal != "≥ 1" || rs[0].Anchor != "b" || rs[0].Note != "new" {
		t.Errorf("replaced record %+v: want figure 3, the old goal and anchor, the new note", rs[0])
	}
	rs = Upsert(rs, Record{Metric: "ratio e/b", Figure: "4", Command: "x"})
	rs = Upsert(rs, Record{Metric: "ratio f/g", Figure: "5", Command: "z"})
	var order []string
	for _, r := range rs {
		order = append(order, r.Metric)
	}
	if got := strings.Join(order, ","); got != "ratio a/b,ratio e/b,ratio c/d,ratio f/g" {
		t.Errorf("order %s: a new metric goes after its command's last record, else last", got)
	}
}

// A metric at a new GOMAXPROCS goes beside its family and takes its goal.
func TestUpsertFamily(t *testing.T) {
	t.Parallel()
	rs := []Record{
		{Metric: "headroom x@400G G1", Goal: "≥ 4", Anchor: "400 Gb/s link", Command: "make bench-headroom"},
		{Metric: "headroom y@400G G1", Goal: "≥ 1", Command: "make bench-headroom"},
	}
	rs = Upsert(rs, Record{Metric: "headroom x@400G G2", Figure: "9", Command: "make bench-headroom"})
	if rs[1].Metric != "headroom x@400G G2" || rs[1].Goal != "≥ 4" || rs[1].Anchor != "400 Gb/s link" {
		t.Errorf("new G2 record %+v: want it second, with G1's goal and anchor", rs[1])
	}
}
