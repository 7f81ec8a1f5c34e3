package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// cpuProfile is the --cpuprofile flag of every command: where in the Soft-RoCE VM, say,
// a receiver's CPU goes (`go tool pprof ringcap FILE`).
type cpuProfile struct {
	path string
	f    *os.File
}

func (p *cpuProfile) add(root *cobra.Command) {
	root.PersistentFlags().StringVar(&p.path, "cpuprofile", "", "write a Go CPU profile of the command to `file` (read it with go tool pprof)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return p.start() }
}

func (p *cpuProfile) start() error {
	if p.path == "" {
		return nil
	}
	f, err := os.Create(p.path)
	if err != nil {
		return fmt.Errorf("create the CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("start the CPU profile: %w", err)
	}
	p.f = f
	return nil
}

// stop ends a profile that start began, also after a failed command. Idempotent.
func (p *cpuProfile) stop() error {
	if p.f == nil {
		return nil
	}
	pprof.StopCPUProfile()
	err := p.f.Close()
	p.f = nil
	if err != nil {
		return fmt.Errorf("write the CPU profile: %w", err)
	}
	return nil
}
