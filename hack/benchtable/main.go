// Command benchtable keeps docs/benchmarks.md's table of latest figures generated from
// docs/benchmarks.tsv, the file of records (internal/benchstat.Record), one per metric.
//
//	go run ./hack/benchtable                 regenerate the page's table (make generate)
//	go run ./hack/benchtable record -command 'make bench-dada' -machine 'host' RUN.log ...
//
// record reads the logs of a bench target's run, takes every figure line
// (internal/benchstat.ParseResults: "ratio NAME=FIGURE [LO, HI] …", "headroom …", "crossings
// …"), stamps each with today's date (UTC), the commit (git rev-parse --short HEAD), the
// machine and the command (and -variant, for a run with knobs, in the metric), replaces the record of its metric (keeping its goal and anchor
// when the line names none) or adds one, and regenerates the table. The bench targets call it
// after a run that passed; a run without figure lines (bench-operator, bench-plugin today)
// records nothing.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/ringcap/ringcap/internal/benchstat"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

type options struct {
	records, page             string
	command, machine, variant string
	date, commit              string
	logs                      []string
}

func run(args []string) error {
	recording := len(args) > 0 && args[0] == "record"
	if recording {
		args = args[1:]
	}
	fs := flag.NewFlagSet("benchtable", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.records, "records", "docs/benchmarks.tsv", "the file of records")
	fs.StringVar(&o.page, "page", "docs/benchmarks.md", "the page whose table is generated")
	fs.StringVar(&o.command, "command", "", "record: the command that printed the figures")
	fs.StringVar(&o.machine, "machine", "host", "record: where it ran (host, VM, e2e; add \", loaded\" on a busy one)")
	fs.StringVar(&o.variant, "variant", "", "record: a run with knobs: recorded under each metric followed by \" (VARIANT)\"")
	fs.StringVar(&o.date, "date", "", "record: the date (default today, UTC)")
	fs.StringVar(&o.commit, "commit", "", "record: the commit (default git rev-parse --short HEAD)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.logs = fs.Args()
	if recording {
		if err := record(o); err != nil {
			return err
		}
	}
	return generate(o.records, o.page)
}

// record upserts the figures of o's logs into the file of records.
func record(o options) error {
	if o.command == "" || len(o.logs) == 0 {
		return errors.New("record: give -command and at least one log")
	}
	if err := o.stamp(); err != nil {
		return err
	}
	rs, err := readRecords(o.records)
	if err != nil {
		return err
	}
	n := 0
	for _, path := range o.logs {
		got, err := parseLog(path)
		if err != nil {
			return err
		}
		for _, r := range got {
			r.Date, r.Commit, r.Machine, r.Command = o.date, o.commit, o.machine, o.command
			if o.variant != "" {
				r.Metric += " (" + o.variant + ")"
			}
			rs = benchstat.Upsert(rs, r)
			n++
		}
	}
	fmt.Fprintf(os.Stderr, "benchtable: recorded %d figures from %s in %s\n", n, strings.Join(o.logs, ", "), o.records)
	return writeRecords(o.records, rs)
}

func (o *options) stamp() error {
	if o.date == "" {
		o.date = time.Now().UTC().Format(time.DateOnly)
	}
	if o.commit == "" {
		out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
		if err != nil {
			return fmt.Errorf("record: find the commit measured (git rev-parse): %w", err)
		}
		o.commit = strings.TrimSpace(string(out))
	}
	return nil
}

func parseLog(path string) ([]benchstat.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	defer func() { _ = f.Close() }()
	rs, err := benchstat.ParseResults(f)
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", path, err)
	}
	return rs, nil
}

// generate rewrites the page's table from the records, leaving the file untouched when
// nothing changed.
func generate(records, page string) error {
	rs, err := readRecords(records)
	if err != nil {
		return err
	}
	old, err := os.ReadFile(page)
	if err != nil {
		return fmt.Errorf("generate the table: %w", err)
	}
	updated, err := splice(string(old), render(rs))
	if err != nil {
		return fmt.Errorf("generate the table in %s: %w", page, err)
	}
	if bytes.Equal(old, []byte(updated)) {
		return nil
	}
	return os.WriteFile(page, []byte(updated), 0o644)
}

func readRecords(path string) ([]benchstat.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open the records: %w", err)
	}
	defer func() { _ = f.Close() }()
	rs, err := benchstat.ReadRecords(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rs, nil
}

func writeRecords(path string, rs []benchstat.Record) error {
	var b bytes.Buffer
	if err := benchstat.WriteRecords(&b, rs); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write the records: %w", err)
	}
	return nil
}
