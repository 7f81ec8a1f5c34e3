package main

import (
	"context"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/ringcap/ringcap/pkg/dada"
)

// ring header shows the header the writer wrote last, also when a reader slot nobody
// reads from is still at the first observation: with no reader at all, and beside a
// persistent reader that has read both observations. --unread shows dada_header's
// choice, the oldest header a slot has not read.
func TestRingHeaderShowsTheLatestObservation(t *testing.T) {
	for _, c := range []struct {
		name     string
		readers  string
		reading  bool
		unreadIs string
	}{
		{"no reader", "1", false, "OBS1"},
		{"an idle slot beside a reader", "2", true, "OBS1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := createRing(t, "-b", "4096", "-n", "8", "-r", c.readers)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var read <-chan cliResult
			if c.reading {
				read = startRead(t, ctx, k, "-o", os.DevNull)
			}
			for _, unread := range [][]string{nil, {"--unread"}} {
				args := append([]string{"ring", "header", "-k", k, "--wait", "50ms"}, unread...)
				// The error names the ring by the key the user gave, not its header ring's.
				if _, _, err := ringcap(context.Background(), args...); err == nil || !strings.Contains(err.Error(), "wait for a header on ring "+k+":") {
					t.Errorf("ring header %v before any observation: %v", unread, err)
				}
			}
			for _, obs := range []string{"OBS1", "OBS2"} {
				mustRun(t, "ring", "write", "-k", k, "--seed", "1", "--bytes", "1000", "--header", "OBSNAME="+obs)
			}
			if c.reading {
				h, err := dada.Connect(mustKey(k), dada.ConnectOptions{})
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = h.Close() }()
				waitFor(t, func(s dada.Snapshot) bool { return s.Data.Readers[0].RXfer == 2 || s.Data.Readers[1].RXfer == 2 }, h)
			}
			if hdr, _ := mustRun(t, "ring", "header", "-k", k, "--wait", "10s"); !regexp.MustCompile(`(?m)^OBSNAME +OBS2$`).MatchString(hdr) {
				t.Errorf("ring header after OBS2 shows\n%s", hdr)
			}
			if hdr, _ := mustRun(t, "ring", "header", "-k", k, "--wait", "10s", "--unread"); !regexp.MustCompile(`(?m)^OBSNAME +` + c.unreadIs + `$`).MatchString(hdr) {
				t.Errorf("ring header --unread shows\n%s\nwant %s", hdr, c.unreadIs)
			}
			if c.reading {
				cancel()
				if r := <-read; r.err != nil || !strings.Contains(r.errs, "observations=2 ") {
					t.Errorf("reader: %v\n%s", r.err, r.errs)
				}
			}
		})
	}
}

// A command whose output is its result fails when the output cannot be written (here:
// stdout on a full disk, /dev/full), instead of exiting 0 having printed nothing.
func TestRingCommandsFailWhenTheirOutputFails(t *testing.T) {
	k := createRing(t, "-b", "4096", "-n", "4")
	mustRun(t, "ring", "write", "-k", k, "--seed", "1", "--bytes", "1000")
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = full.Close() }()
	enospc := syscall.ENOSPC.Error()
	for _, args := range [][]string{
		{"ring", "monitor", "-k", k, "-c", "2", "--interval", "1ms"},
		{"ring", "info", "-k", k},
		{"ring", "info", "-k", k, "--json"},
		{"ring", "header", "-k", k},
	} {
		errs, err := runChild(t, nil, full, args...)
		if err == nil || !strings.Contains(errs, enospc) {
			t.Errorf("ringcap %s > /dev/full: %v\n%s", strings.Join(args, " "), err, errs)
		}
	}
	// ring read -o to a full disk fails at the first block, and releases its slot.
	_, errs, err := ringcap(context.Background(), "ring", "read", "-k", k, "-s", "-o", "/dev/full")
	if err == nil || !strings.Contains(err.Error(), "write output: ") || !strings.Contains(err.Error(), enospc) {
		t.Errorf("ring read -o /dev/full: %v\n%s", err, errs)
	}
	if s := snapshot(t, k); s.Data.SemRead != 1 || s.Header.SemRead != 1 {
		t.Errorf("free reader slots after the failed reader: data %d header %d, want 1 1", s.Data.SemRead, s.Header.SemRead)
	}
}

// failAfter accepts n bytes and then fails every write, as a disk that fills does.
type failAfter struct{ n int }

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k := f.n
		f.n = 0
		return k, syscall.ENOSPC
	}
	f.n -= len(p)
	return len(p), nil
}

// ring monitor whose output fails after its first lines (a log on a disk that fills)
// stops with the error instead of printing into nothing until interrupted.
func TestRingMonitorStopsWhenItsOutputFails(t *testing.T) {
	k := createRing(t, "-b", "4096", "-n", "4")
	var summary strings.Builder
	root := newRootCmd(&cpuProfile{})
	root.SetArgs([]string{"ring", "monitor", "-k", k, "-c", "1"})
	root.SetOut(&summary)
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	root = newRootCmd(&cpuProfile{})
	root.SetArgs([]string{"ring", "monitor", "-k", k, "-c", "3", "--interval", "1ms"})
	root.SetOut(&failAfter{n: summary.Len()}) // the summary, the heading and one line
	root.SetErr(&strings.Builder{})
	if err := root.ExecuteContext(context.Background()); err == nil || err.Error() != "monitor: write output: "+syscall.ENOSPC.Error() {
		t.Fatalf("monitor into a full disk: %v", err)
	}
}

// ring header and info without a ring name the key the user gave (-k K), not the
// header ring's K+1.
func TestRingCommandsNameTheGivenKey(t *testing.T) {
	k := testKey(t)
	for _, args := range [][]string{
		{"ring", "header", "-k", k.String(), "--wait", "10ms"},
		{"ring", "info", "-k", k.String()},
	} {
		_, _, err := ringcap(context.Background(), args...)
		if err == nil || !strings.Contains(err.Error(), "ring "+k.String()+":") || strings.Contains(err.Error(), (k+1).String()) {
			t.Errorf("ringcap %s: %v, want an error naming ring %s and not %s", strings.Join(args, " "), err, k, k+1)
		}
	}
}
