package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every flag of every command shows at most one default in its help, and its value
// name is one word: pflag appends "(default X)" to a usage that already says its own
// default, and takes a back-quoted part of the usage as the value's name.
func TestFlagHelpOneDefaultAndOneWordValueName(t *testing.T) {
	var prof cpuProfile
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			one := pflag.NewFlagSet("", pflag.ContinueOnError)
			one.AddFlag(f)
			line := strings.TrimSpace(one.FlagUsages())
			if name, _ := pflag.UnquoteUsage(f); strings.ContainsAny(name, " \t") {
				t.Errorf("%s: value name %q is more than one word (a back-quoted part of the usage): %s", c.CommandPath(), name, line)
			}
			if n := strings.Count(line, "(default"); n > 1 {
				t.Errorf("%s: help shows %d defaults: %s", c.CommandPath(), n, line)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(&prof))
}
