package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/ringcap/ringcap/pkg/capture/sender"
)

// progressTo sets up progress lines on w (unless --quiet): in place on a
// terminal, every 200 ms; as log lines elsewhere, every 5 s (or --progress).
// It says whether w is a terminal.
func (o *sendOpts) progressTo(cfg *sender.Config, w io.Writer) (tty bool) {
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	if o.quiet {
		return tty
	}
	cfg.ProgressEvery = o.progress
	if cfg.ProgressEvery == 0 {
		cfg.ProgressEvery = 5 * time.Second
		if tty {
			cfg.ProgressEvery = 200 * time.Millisecond
		}
	}
	cfg.Progress = func(p sender.Progress) { printProgress(w, tty, p) }
	return tty
}

func printProgress(w io.Writer, tty bool, p sender.Progress) {
	gbps := 0.0
	if s := p.Elapsed.Seconds(); s > 0 {
		gbps = float64(p.Bytes) * 8 / s / 1e9
	}
	held := ""
	if p.Holding {
		held = fmt.Sprintf("held back by the receiver's ring readers for %.1f s", p.HoldFor.Seconds())
	}
	if !tty {
		line := fmt.Sprintf("send: progress bytes=%d acked=%d seconds=%.3f gbps=%.3f held_back_seconds=%.3f", p.Bytes, p.Acked, p.Elapsed.Seconds(), gbps, p.HeldBack.Seconds())
		if held != "" {
			line += " (" + held + ")"
		}
		outln(w, line)
		return
	}
	const width = 30
	bar := strings.Repeat(" ", width)
	pct := ""
	if p.Total > 0 {
		n := int(float64(width) * float64(p.Bytes) / float64(p.Total))
		bar = strings.Repeat("=", n) + strings.Repeat(" ", width-n)
		pct = fmt.Sprintf("%3.0f%% ", 100*float64(p.Bytes)/float64(p.Total))
	}
	if held != "" {
		held = "  " + held
	}
	outf(w, "\r[%s] %s%s  %.3f Gb/s  %s%s\x1b[K", bar, pct, humanBytes(p.Bytes), gbps, p.Elapsed.Truncate(100*time.Millisecond), held)
}

func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.2f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
