package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

var commands []func() *cobra.Command

// register adds a top-level subcommand; each command file calls it from init.
func register(c func() *cobra.Command) { commands = append(commands, c) }

// ownDefault keeps pflag from appending "(default X)" to the help of a flag whose
// usage says its default itself (from the environment, or a sentinel meaning
// automatic): its shown default becomes the type's zero.
func ownDefault(fs *pflag.FlagSet, name string) {
	f := fs.Lookup(name)
	switch f.Value.Type() {
	case "string":
		f.DefValue = ""
	default:
		f.DefValue = "0"
	}
}

// Every persistent pre-run hook runs, the root's (--cpuprofile) first, then a command
// group's own (ring: -k from RINGCAP_RING_KEY). Set once, before any command is made.
func init() { cobra.EnableTraverseRunHooks = true }

func newRootCmd(prof *cpuProfile) *cobra.Command {
	root := &cobra.Command{
		Use:           "ringcap",
		Short:         "High-rate RDMA capture into PSRDADA ring buffers",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	prof.add(root)
	for _, c := range commands {
		root.AddCommand(c())
	}
	return root
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var prof cpuProfile
	err := newRootCmd(&prof).ExecuteContext(ctx)
	stop()
	if perr := prof.stop(); err == nil {
		err = perr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ringcap:", err)
		os.Exit(1)
	}
}
