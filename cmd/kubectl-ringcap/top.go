package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// clearScreen moves the cursor home and clears the terminal, as top does between frames.
const clearScreen = "\x1b[H\x1b[2J"

func newTopCmd(cf *clusterFlags, now func() time.Time) *cobra.Command {
	var interval time.Duration
	var once bool
	c := &cobra.Command{
		Use:   "top",
		Short: "Every capture with its rate, ring fill and slowest reader, redrawn until interrupted",
		Long: "top lists the RingCaptures of the namespace (every namespace with -A): phase, rate, bytes received, " +
			"ring fill (blocks the slowest reader has still to open, of the ring's blocks), the slowest reader slot " +
			"and its lag, how long the readers held the receiver back, observations ended, and age. It redraws every " +
			"--interval until interrupted; --once prints the table once.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if interval <= 0 {
				return fmt.Errorf("--interval %s: must be positive", interval)
			}
			s, err := cf.connect()
			if err != nil {
				return err
			}
			t := &topper{s: s, all: cf.allNamespaces, now: now, out: cmd.OutOrStdout()}
			if once {
				return t.frame(cmd.Context())
			}
			return t.loop(cmd.Context(), interval)
		},
	}
	c.Flags().DurationVar(&interval, "interval", 2*time.Second, "time between redraws")
	c.Flags().BoolVar(&once, "once", false, "print the table once and exit")
	return c
}

// topper draws the frames of `top`.
type topper struct {
	s   *session
	all bool
	now func() time.Time
	out io.Writer
}

// list returns the captures of the session's namespace, or of all with -A.
func (t *topper) list(ctx context.Context) ([]ringcapv1.RingCapture, error) {
	var list ringcapv1.RingCaptureList
	var opts []client.ListOption
	where := "every namespace"
	if !t.all {
		opts = append(opts, client.InNamespace(t.s.namespace))
		where = "namespace " + t.s.namespace
	}
	if err := t.s.client.List(ctx, &list, opts...); err != nil {
		return nil, fmt.Errorf("list RingCaptures in %s: %w", where, err)
	}
	return list.Items, nil
}

// frame prints the table once (or a line saying there is nothing to show).
func (t *topper) frame(ctx context.Context) error {
	items, err := t.list(ctx)
	if err != nil {
		return err
	}
	if len(items) == 0 {
		where := "in namespace " + t.s.namespace
		if t.all {
			where = "in any namespace"
		}
		_, err := fmt.Fprintf(t.out, "No RingCaptures found %s.\n", where)
		return err
	}
	return writeTable(t.out, topRows(items, t.all, t.now()))
}

// loop redraws the table every interval until ctx ends (an interrupt), which is not an error.
func (t *topper) loop(ctx context.Context, interval time.Duration) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if isTerminal(t.out) {
			if _, err := io.WriteString(t.out, clearScreen); err != nil {
				return fmt.Errorf("clear the screen: %w", err)
			}
		}
		if err := t.frame(ctx); err != nil && ctx.Err() == nil {
			return err
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil
			}
			return ctx.Err()
		case <-tick.C:
		}
		if !isTerminal(t.out) {
			if _, err := fmt.Fprintln(t.out); err != nil {
				return fmt.Errorf("write a frame separator: %w", err)
			}
		}
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
