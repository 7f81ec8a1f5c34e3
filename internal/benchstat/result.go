package benchstat

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// The lines a benchmark prints its figures on. A figure line names its metric before the
// first "=" (a kind, ratio, headroom or crossings, then up to four words) and gives the
// figure after it, then optionally its interval: "[LO, HI]" or "(min LO max HI". Anything
// may precede the kind (a tool's prefix, a test's file:line). A headroom run says its
// GOMAXPROCS, which becomes part of the metric (" G1"). A ratio line may name further
// ratios ("A/B=F") or siblings of a longer metric ("perblock=F" after "X wholering=F").
// bench-rdma gives the interval on a line of its own: "interval NAME [LO, HI]".
const num = `-?[0-9]+(?:\.[0-9]+)?`

var (
	figureLine   = regexp.MustCompile(`(?:^|[\s:])((?:ratio|headroom|crossings) [^=\s]+(?: [^=\s]+){0,3})=(` + num + `)(\s.*)?$`)
	bracketIvl   = regexp.MustCompile(`^\s*\[(` + num + `), (` + num + `)\]`)
	minMaxIvl    = regexp.MustCompile(`^\s*\(min (` + num + `) max (` + num + `)`)
	intervalLine = regexp.MustCompile(`(?:^|[\s:])interval (\S+) \[(` + num + `), (` + num + `)\]`)
	gomaxprocs   = regexp.MustCompile(`GOMAXPROCS=([0-9]+)`)
	goalText     = regexp.MustCompile(`goal\s*(<=|>=|≤|≥)\s*(` + num + `)`)
	furtherPair  = regexp.MustCompile(`(?:^|\s)([^=\s]+)=(` + num + `)`)
)

// ParseResults reads benchmark output and returns a record per figure (Metric, Figure, Low,
// High, Anchor, Goal, Note), in the order printed; a metric printed twice keeps its last
// figure.
func ParseResults(r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out []Record
	add := func(rec Record) { out = Upsert(out, rec) }
	for sc.Scan() {
		line := sc.Text()
		if m := intervalLine.FindStringSubmatch(line); m != nil {
			setInterval(out, "ratio "+m[1], m[2], m[3])
			continue
		}
		for _, rec := range parseFigureLine(line) {
			add(rec)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read benchmark output: %w", err)
	}
	return out, nil
}

func setInterval(rs []Record, metric, lo, hi string) {
	for i := range rs {
		if rs[i].Metric == metric {
			rs[i].Low, rs[i].High = lo, hi
		}
	}
}

// parseFigureLine returns the figures of one line: none, its metric, and for a ratio line
// the further ratios and siblings it names.
func parseFigureLine(line string) []Record {
	m := figureLine.FindStringSubmatch(line)
	if m == nil {
		return nil
	}
	name, tail := m[1], m[3]
	if g := gomaxprocs.FindStringSubmatch(tail); g != nil {
		name += " G" + g[1]
	}
	first := figure(name, m[2], tail)
	out := []Record{first}
	if strings.HasPrefix(name, "headroom ") {
		return out
	}
	for _, p := range furtherPair.FindAllStringSubmatchIndex(tail, -1) {
		key, val, rest := tail[p[2]:p[3]], tail[p[4]:p[5]], tail[p[5]:]
		if rest != "" && rest[0] != ' ' {
			continue // part of a name, such as readers=1/block=16MiB
		}
		if n := furtherName(m[1], key); n != "" {
			out = append(out, figure(n, val, rest))
		}
	}
	return out
}

// furtherName names a further figure of a ratio or crossings line: a ratio "A/B" by itself, a
// sibling of a metric of three or more words by the metric with its last word replaced; ""
// for anything else (units such as ns/op).
func furtherName(first, key string) string {
	if strings.HasSuffix(key, "/op") || strings.HasPrefix(key, "op/") || strings.Contains(key, "GOMAXPROCS") {
		return ""
	}
	if strings.Contains(key, "/") {
		if !strings.HasPrefix(first, "ratio ") {
			return ""
		}
		return "ratio " + key
	}
	if w := strings.Fields(first); len(w) >= 3 {
		return strings.Join(append(w[:len(w)-1], key), " ")
	}
	return ""
}

func figure(name, fig, tail string) Record {
	rec := Record{Metric: name, Figure: fig, Anchor: anchorOf(name)}
	rest := tail
	if iv := bracketIvl.FindStringSubmatch(tail); iv != nil {
		rec.Low, rec.High, rest = iv[1], iv[2], tail[len(iv[0]):]
	} else if iv := minMaxIvl.FindStringSubmatch(tail); iv != nil {
		rec.Low, rec.High = iv[1], iv[2]
	}
	if g := goalText.FindStringSubmatch(tail); g != nil {
		rec.Goal = strings.NewReplacer("<=", "≤", ">=", "≥").Replace(g[1]) + " " + g[2]
	}
	rec.Note = strings.TrimSpace(rest)
	return rec
}

// anchorOf is what a metric is measured against: a ratio's denominator, a 400 Gb/s link's
// rate for headroom, benchfabric's model for crossings.
func anchorOf(metric string) string {
	kind, rest, _ := strings.Cut(metric, " ")
	switch kind {
	case "headroom":
		return "400 Gb/s link"
	case "crossings":
		return "benchfabric's model"
	}
	for _, w := range strings.Fields(rest) {
		if _, den, ok := strings.Cut(w, "/"); ok {
			return den
		}
	}
	return ""
}
