package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// newRootCmd returns `kubectl ringcap` writing to out; now is the clock for ages.
func newRootCmd(out io.Writer, now func() time.Time) *cobra.Command {
	root := &cobra.Command{
		Use:           "kubectl-ringcap",
		Short:         "Watch ringcap captures (RingCaptures): rate, ring fill, reader lag",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl ringcap"},
	}
	root.SetOut(out)
	cf := &clusterFlags{}
	cf.add(root.PersistentFlags())
	root.AddCommand(newTopCmd(cf, now), newDescribeCmd(cf, now))
	return root
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd(os.Stdout, time.Now).ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubectl ringcap:", err)
		os.Exit(1)
	}
}
