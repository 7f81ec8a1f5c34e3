package benchstat

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// Record is one benchmark figure's latest result: a row of docs/benchmarks.tsv, the file
// the bench targets update (hack/benchtable record) and docs/benchmarks.md's table is
// generated from. Every field is text as printed, so a figure keeps the precision it was
// measured with; Low and High are empty when the run gave no interval.
type Record struct {
	Metric  string // the printed name, e.g. "ratio send/ib_send_bw" or "headroom …@400G G1"
	Figure  string // the median (or the single run's value)
	Low     string // the interval for the median
	High    string
	Anchor  string // what the figure is measured against in the same run
	Goal    string // the target the figure settles, e.g. "≥ 0.95"; empty: none
	Date    string // YYYY-MM-DD, UTC
	Commit  string // the commit measured
	Machine string // host, VM or e2e, with how busy it was
	Command string // the command that printed the figure
	Note    string // what else the run printed beside the figure
}

// RecordColumns is the header line of a file of records, in field order.
var RecordColumns = []string{"metric", "figure", "low", "high", "anchor", "goal", "date", "commit", "machine", "command", "note"}

func (r Record) fields() []string {
	return []string{r.Metric, r.Figure, r.Low, r.High, r.Anchor, r.Goal, r.Date, r.Commit, r.Machine, r.Command, r.Note}
}

func recordOf(f []string) Record {
	return Record{Metric: f[0], Figure: f[1], Low: f[2], High: f[3], Anchor: f[4], Goal: f[5],
		Date: f[6], Commit: f[7], Machine: f[8], Command: f[9], Note: f[10]}
}

// ReadRecords reads a file of records: tab-separated, the RecordColumns header first.
func ReadRecords(r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out []Record
	line := 0
	for sc.Scan() {
		line++
		f := strings.Split(sc.Text(), "\t")
		if line == 1 {
			if !slices.Equal(f, RecordColumns) {
				return nil, fmt.Errorf("read records: the header is %q, want %q", f, RecordColumns)
			}
			continue
		}
		if len(f) != len(RecordColumns) {
			return nil, fmt.Errorf("read records: line %d has %d fields, want %d", line, len(f), len(RecordColumns))
		}
		out = append(out, recordOf(f))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read records: %w", err)
	}
	if line == 0 {
		return nil, fmt.Errorf("read records: no header line")
	}
	return out, nil
}

// WriteRecords writes rs with the header, one record a line; tabs and line breaks inside a
// field become spaces.
func WriteRecords(w io.Writer, rs []Record) error {
	bw := bufio.NewWriter(w)
	lines := [][]string{RecordColumns}
	for _, r := range rs {
		lines = append(lines, r.fields())
	}
	for _, f := range lines {
		if _, err := bw.WriteString(strings.Join(flattened(f), "\t") + "\n"); err != nil {
			return fmt.Errorf("write records: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write records: %w", err)
	}
	return nil
}

// flattened returns f's fields with their tabs and line breaks made single spaces, in a new
// slice: f may be RecordColumns, which every caller shares.
func flattened(f []string) []string {
	out := make([]string, len(f))
	for i, s := range f {
		out[i] = strings.Join(strings.Fields(s), " ")
	}
	return out
}

// Upsert replaces the record of r's metric, keeping its anchor and goal when r has none,
// or adds r: after the last record of its family (the same metric at another GOMAXPROCS,
// " G1" and " G2"), whose anchor and goal it takes when it has none, else after the last
// record of its command, else at the end.
func Upsert(rs []Record, r Record) []Record {
	if i := slices.IndexFunc(rs, func(o Record) bool { return o.Metric == r.Metric }); i >= 0 {
		rs[i] = inherit(r, rs[i])
		return rs
	}
	at, kin := len(rs), -1
	for i, o := range rs {
		switch {
		case family(o.Metric) == family(r.Metric):
			kin, at = i, i+1
		case o.Command == r.Command && kin < 0:
			at = i + 1
		}
	}
	if kin >= 0 {
		r = inherit(r, rs[kin])
	}
	return slices.Insert(rs, at, r)
}

// inherit gives r o's anchor and goal where r has none.
func inherit(r, o Record) Record {
	if r.Anchor == "" {
		r.Anchor = o.Anchor
	}
	if r.Goal == "" {
		r.Goal = o.Goal
	}
	return r
}

var gomaxprocsSuffix = regexp.MustCompile(` G[0-9]+$`)

// family is a metric without its GOMAXPROCS suffix.
func family(metric string) string {
	return gomaxprocsSuffix.ReplaceAllString(metric, "")
}
