package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ringcap/ringcap/pkg/capture/devices"
)

func init() { register(newDevicesCmd) }

func newDevicesCmd() *cobra.Command {
	var output string
	roots := devices.HostRoots()
	c := &cobra.Command{
		Use:   "devices",
		Short: "List the verbs devices and libfabric providers on this host and the ringcap modes each can run",
		Example: "  ringcap devices\n" +
			"  ringcap devices -o json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" {
				return fmt.Errorf("-o %q: want text or json", output)
			}
			r, err := devices.CollectHost(roots)
			if err != nil {
				return err
			}
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			return r.WriteText(cmd.OutOrStdout())
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	c.Flags().StringVar(&roots.Sys, "sys-root", roots.Sys, "sysfs root (as the device plugin's --sys-root)")
	c.Flags().StringVar(&roots.Dev, "dev-root", roots.Dev, "/dev root (as the device plugin's --dev-root)")
	return c
}
