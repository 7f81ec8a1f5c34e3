// Command ratebench is the loopback half of make bench-ingest (issue 53, Speed): `ringcap
// recv --protocol spead` into a real ring (a `ringcap ring read` discarding each block)
// against hack/ingest/recvmmsg-floor.c, a C receiver that only counts, on the same stream
// from `ringcap send --protocol spead --rate R` over 127.0.0.1, 8 KiB packets.
//
// Every run starts its receiver afresh and first sends it a warm-up stream of the ring's
// size and a block (-warm-rate), so that ringcap writes into a ring whose pages are
// touched, as a capture does past its first pass (a first write to a page of a new SysV
// segment costs a page fault). A run is loss-free when the kernel dropped nothing at the
// socket (/proc/net/udp) and the receiver counted, and ringcap wrote into the ring, every
// packet sent.
//
// Each round finds each receiver's highest loss-free rate by stepping the rate up by
// -factor from -start until a run loses packets, then halving the gap -bisect times; the
// order of the two receivers alternates from round to round. Then it runs both at -cpu-rate
// for the receiver's CPU seconds per GiB (/proc/PID/task/*/schedstat while the stream
// runs). It prints each run and round, and last the medians of the rounds' ratios with
// their intervals (internal/benchstat):
//
//	ratio ringcap/recvmmsg-floor=… [LO, HI]  goal ≥ 0.9: …
//	ratio ringcap-cpu/recvmmsg-floor-cpu=… [LO, HI]  …
//
// The receivers run on -recv-cpu and the sender and the ring's reader on -send-cpu (taskset;
// -1: not pinned). A search the sender's own ceiling ends (it reaches less than 90 % of the
// rate asked for) or -max ends says so: its ratio then bounds the receivers from below
// only. No round starts that would likely end past -budget.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ratebench:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	ringcap, floor     string
	floorWait          string
	rounds             int
	duration, cpuDur   time.Duration
	budget             time.Duration
	search             searchParams
	cpuRate, warmRate  float64
	recvCPU, sendCPU   int
	buffer             int
	blockBytes, blocks int
	keyBase            uint64
	tmp                string
	out, log           io.Writer
}

func parseOptions(args []string, out io.Writer) (options, error) {
	fs := flag.NewFlagSet("ratebench", flag.ContinueOnError)
	o := options{out: out, log: io.Discard}
	var start, lowest, highest, cpuRate, warmRate float64
	var verbose bool
	fs.StringVar(&o.ringcap, "ringcap", "bin/ringcap", "the ringcap binary")
	fs.StringVar(&o.floor, "floor", "", "the compiled hack/ingest/recvmmsg-floor.c (required)")
	fs.StringVar(&o.floorWait, "floor-wait", "block", "how the floor waits for datagrams: block (blocking recvmmsg), epoll (as ringcap), spin (polls 50 us, then sleeps) or busy (polls, a whole core)")
	fs.IntVar(&o.rounds, "rounds", 5, "rounds (each: both searches, then both CPU runs)")
	fs.DurationVar(&o.budget, "budget", 9*time.Minute, "start no round that would likely end past this time from the start")
	fs.DurationVar(&o.duration, "duration", 2*time.Second, "stream time of one search run")
	fs.DurationVar(&o.cpuDur, "cpu-duration", 3*time.Second, "stream time of one CPU run")
	fs.Float64Var(&start, "start", 128, "first rate of a search, MiB/s")
	fs.Float64Var(&lowest, "min", 16, "lowest rate a search tries, MiB/s")
	fs.Float64Var(&highest, "max", 8192, "highest rate a search tries, MiB/s")
	fs.Float64Var(&o.search.Factor, "factor", 2, "a search's step up (and down)")
	fs.IntVar(&o.search.Bisect, "bisect", 3, "runs narrowing the gap between the last loss-free and the first lossy rate")
	fs.Float64Var(&cpuRate, "cpu-rate", 256, "the rate of the CPU runs, MiB/s (one both receivers take)")
	fs.Float64Var(&warmRate, "warm-rate", 32, "rate of the warm-up stream each receiver gets first (the ring's size and a block), MiB/s (0: none)")
	fs.IntVar(&o.recvCPU, "recv-cpu", 1, "CPU of the receivers (-1: not pinned)")
	fs.IntVar(&o.sendCPU, "send-cpu", 0, "CPU of the sender and the ring's reader (-1: not pinned)")
	fs.IntVar(&o.buffer, "buffer", 4<<20, "socket receive buffer of both receivers, bytes")
	fs.IntVar(&o.blockBytes, "block-bytes", 4<<20, "ring block size")
	fs.IntVar(&o.blocks, "blocks", 8, "ring blocks")
	fs.BoolVar(&verbose, "v", false, "copy ringcap recv's and the reader's log to stderr")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.floor == "" || o.rounds < 1 {
		return o, fmt.Errorf("give -floor PATH and -rounds of at least 1")
	}
	o.search = searchParams{Start: start * mib, Min: lowest * mib, Max: highest * mib, Factor: o.search.Factor, Bisect: o.search.Bisect, SenderShort: 0.1}
	o.cpuRate, o.warmRate = cpuRate*mib, warmRate*mib
	if runtime.NumCPU() < 2 {
		o.recvCPU, o.sendCPU = -1, -1
	}
	if verbose {
		o.log = os.Stderr
	}
	o.keyBase = 0x5a000000 | uint64(os.Getpid()&0xfff)<<12
	return o, o.search.validate()
}

// bench is one run of the command.
type bench struct {
	o    options
	keys uint64 // rings made so far
	runs int    // trials made so far
}

func run(args []string, out io.Writer) error {
	o, err := parseOptions(args, out)
	if err != nil {
		return err
	}
	if o.tmp, err = os.MkdirTemp("", "ratebench"); err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(o.tmp) }()
	b := &bench{o: o}
	began := time.Now()
	var rs []round
	for i := range o.rounds {
		t := time.Now()
		r, err := b.round(i)
		if err != nil {
			return fmt.Errorf("round %d: %w", i+1, err)
		}
		_, _ = fmt.Fprintf(out, "round %d: %s\n", i+1, r)
		rs = append(rs, r)
		if i+1 < o.rounds && time.Since(began)+time.Since(t) > o.budget {
			_, _ = fmt.Fprintf(out, "ratebench: stopping after %d of %d rounds: another would pass the budget of %s\n", i+1, o.rounds, o.budget)
			break
		}
	}
	if err := summarize(out, rs, &o); err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "ratebench: %d rounds, %d runs in %.0f s\n", len(rs), b.runs, time.Since(began).Seconds())
	return nil
}
