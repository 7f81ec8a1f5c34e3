// Command headroomab reads the interleaved output of two builds' headroom benchmarks
// (hack/headroom-ab.sh: "== old round N" and "== new round N" headings, each followed by
// the `headroom NAME@400G=... cpu-ns/op=C [..]` lines of that build) and prints, per figure,
// the CPU time per operation of the new build against the old one, one ratio per round,
// as `ratio NAME-new/NAME-old=MEDIAN [LO, HI]` (internal/benchstat's median interval over the
// rounds): below 1 the new build is cheaper.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/ringcap/ringcap/internal/benchstat"
)

var (
	heading = regexp.MustCompile(`^== (old|new) round (\d+)`)
	figure  = regexp.MustCompile(`^headroom (\S+)@400G=.*cpu-ns/op=([0-9.]+)`)
	procs   = regexp.MustCompile(`GOMAXPROCS=(\d+)`)
)

// costs are CPU ns per operation by figure, round and build.
type costs map[string]map[string]map[string]float64

func parse(r io.Reader) (costs, error) {
	c := costs{}
	build, round := "", ""
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if m := heading.FindStringSubmatch(line); m != nil {
			build, round = m[1], m[2]
			continue
		}
		m := figure.FindStringSubmatch(line)
		if m == nil || build == "" {
			continue
		}
		name := m[1] + " 1"
		if p := procs.FindStringSubmatch(line); p != nil {
			name = m[1] + " " + p[1]
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		if c[name] == nil {
			c[name] = map[string]map[string]float64{}
		}
		if c[name][round] == nil {
			c[name][round] = map[string]float64{}
		}
		c[name][round][build] = v
	}
	return c, sc.Err()
}

// ratios are the per-round new/old ratios of each figure measured by both builds.
func (c costs) ratios() map[string][]float64 {
	out := map[string][]float64{}
	for name, rounds := range c {
		for _, b := range rounds {
			if b["old"] > 0 && b["new"] > 0 {
				out[name] = append(out[name], b["new"]/b["old"])
			}
		}
	}
	return out
}

func main() {
	c, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "headroomab:", err)
		os.Exit(1)
	}
	rs := c.ratios()
	names := make([]string, 0, len(rs))
	for n := range rs {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		fmt.Fprintln(os.Stderr, "headroomab: no figure measured by both builds")
		os.Exit(1)
	}
	for _, n := range names {
		med, lo, hi := benchstat.MedianCI(rs[n])
		fig, gomaxprocs, _ := strings.Cut(n, " ")
		fmt.Printf("ratio %s-new/%s-old=%.2f [%.2f, %.2f]  (CPU time per op, median of %d alternating rounds, GOMAXPROCS=%s)\n",
			fig, fig, med, lo, hi, len(rs[n]), gomaxprocs)
	}
}
