// Command dashboard writes ringcap's Grafana dashboard, built in Go with the Grafana
// Foundation SDK, to charts/ringcap/files/dashboard.json (make generate); the chart ships it
// as a ConfigMap for Grafana's dashboard sidecar (monitoring.dashboard.enabled).
//
//	go run ./hack/dashboard [-o FILE]
//
// The panels read the receivers' metrics per capture (namespace and pod variables) and the
// device plugin's or DRA driver's per node (instance variable); the data source is the
// variable ${datasource}, of type prometheus. docs/troubleshooting.md lists every metric.
package main

import (
	"flag"
	"fmt"
	"os"
)

// defaultOut is where the chart reads the dashboard from (templates/dashboard.yaml).
const defaultOut = "charts/ringcap/files/dashboard.json"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("dashboard", flag.ContinueOnError)
	out := fs.String("o", defaultOut, "file to write the dashboard's JSON to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	b, err := render()
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		return fmt.Errorf("write the dashboard: %w", err)
	}
	return nil
}
