// Command plugin is ringcap's kubelet device plugin for RDMA devices (see
// internal/plugin). It runs as a privileged DaemonSet with the host's /sys, /dev and
// kubelet device-plugins directory mounted:
//
//	plugin --config /etc/ringcap/plugin.yaml --node-name $(NODE_NAME)
//
// Without --config it serves the default pool ringcap.io/rdma (every RDMA device,
// exclusive). With --mode dra it is instead the DRA driver rdma.ringcap.io (see
// internal/dra): it registers in the kubelet's plugins_registry, publishes the node's
// ResourceSlice (one device per ACTIVE port, the pools' GID policies applied) and
// writes a CDI spec per prepared claim into --cdi-dir (default /var/run/cdi); the
// same binary and config serve both, so the chart's plugin.mode picks one or runs both. With --node-name it publishes node labels and the RDMANode inventory
// through the in-cluster API credentials (or --kubeconfig). SIGTERM or SIGINT stops it
// cleanly (sockets removed). The device plugin asks the kubelet's PodResources API
// (--pod-resources-socket) which pods hold its devices and exports their ports' counters
// per capture; with --node-name it reads those pods' ringcap.io/capture label.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ringcap/ringcap/internal/dra"
	"github.com/ringcap/ringcap/internal/plugin"
	"github.com/ringcap/ringcap/pkg/rdma"
)

// version is set with -ldflags "-X main.version=...".
var version = "dev"

// Modes.
const (
	modeDevicePlugin = "deviceplugin"
	modeDRA          = "dra"
)

type flags struct {
	mode, pluginsDir, registryDir                                                   string
	config, sysRoot, devRoot, kubeletDir, nodeName, metricsAddr, cdiDir, kubeconfig string
	otherConfig, podResourcesSocket                                                 string
	verbosity                                                                       int
	printConfig                                                                     bool
	podUID                                                                          string
	registrationTimeout                                                             time.Duration
}

func main() {
	if err := newCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "plugin:", err)
		os.Exit(1)
	}
}

func newCmd() *cobra.Command {
	var f flags
	cmd := &cobra.Command{
		Use:           "plugin",
		Short:         "Kubelet device plugin for RDMA devices (ringcap.io/<pool>)",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return run(ctx, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.mode, "mode", modeDevicePlugin, "deviceplugin (extended resources ringcap.io/<pool>) or dra (DRA driver "+dra.DriverName+")")
	fl.StringVar(&f.pluginsDir, "kubelet-plugins-dir", "/var/lib/kubelet/plugins/"+dra.DriverName, "dra: the driver's directory under the kubelet's plugins directory (its gRPC socket)")
	fl.StringVar(&f.registryDir, "kubelet-registry-dir", "/var/lib/kubelet/plugins_registry", "dra: the kubelet's plugin registration directory")
	fl.StringVar(&f.podUID, "pod-uid", os.Getenv("POD_UID"), "dra: this pod's UID (default $POD_UID): another instance may run during a rolling update (kubelet >= 1.33); empty: one at a time")
	fl.StringVar(&f.config, "config", "", "config file (YAML); empty: one exclusive pool ringcap.io/rdma with every device")
	fl.StringVar(&f.otherConfig, "other-config", "", "with both running on the node (chart plugin.mode both): the other side's config (the DRA driver's in deviceplugin mode, the device plugin's in dra mode); a device both configs select refuses the start, and one that appears later is left out by both; in dra mode the link counters are then left to the device plugin, which exports every port's")
	fl.StringVar(&f.sysRoot, "sys-root", "/sys", "sysfs root")
	fl.StringVar(&f.devRoot, "dev-root", "/dev", "/dev root (device paths given to pods stay /dev/...)")
	fl.StringVar(&f.podResourcesSocket, "pod-resources-socket", plugin.DefaultPodResourcesSocket, "deviceplugin: the kubelet's PodResources API socket, asked which pods hold the plugin's devices for the per-capture link counters (ringcap_capture_link_increase_total); empty: off")
	fl.StringVar(&f.kubeletDir, "kubelet-dir", "/var/lib/kubelet/device-plugins", "kubelet device-plugins directory (holds kubelet.sock)")
	fl.StringVar(&f.nodeName, "node-name", os.Getenv("NODE_NAME"), "node name for labels and the RDMANode inventory (default $NODE_NAME); empty: not published")
	fl.StringVar(&f.metricsAddr, "metrics-addr", ":9101", "address for /metrics and /healthz (dra: /healthz calls the driver's kubelet sockets); empty: off")
	fl.DurationVar(&f.registrationTimeout, "registration-timeout", 3*time.Minute, "dra: exit with an error when the kubelet has not registered the driver this long after start; 0: no wait")
	fl.StringVar(&f.cdiDir, "cdi-dir", "", "write CDI specs here and name CDI devices in Allocate (e.g. /var/run/cdi); empty: CDI off (dra: /var/run/cdi)")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig for publishing the inventory; empty: in-cluster")
	fl.IntVarP(&f.verbosity, "v", "v", 0, "log verbosity")
	fl.BoolVar(&f.printConfig, "print-config", false, "print the effective config and discovered devices (and those --other-config selects too), then exit")
	// Their usage names the environment variable; the value taken from it is not shown as a
	// second default (in the chart's pods both are set).
	for _, name := range []string{"pod-uid", "node-name"} {
		fl.Lookup(name).DefValue = ""
	}
	return cmd
}

func run(ctx context.Context, f flags) error {
	log := funcr.NewJSON(func(obj string) { fmt.Fprintln(os.Stderr, obj) }, funcr.Options{LogTimestamp: true, Verbosity: f.verbosity})
	cfg := plugin.DefaultConfig()
	if f.config != "" {
		var err error
		if cfg, err = plugin.LoadConfig(f.config); err != nil {
			return err
		}
	}
	var other *plugin.Config
	if f.otherConfig != "" {
		var err error
		if other, err = plugin.LoadConfig(f.otherConfig); err != nil {
			return fmt.Errorf("--other-config: %w", err)
		}
	}
	roots := rdma.Roots{Sys: f.sysRoot, Dev: f.devRoot}
	if f.printConfig {
		return printConfig(os.Stdout, cfg, other, roots)
	}

	switch f.mode {
	case modeDevicePlugin:
	case modeDRA:
		return runDRA(ctx, f, cfg, other, roots, log)
	default:
		return fmt.Errorf("--mode %q: want %s or %s", f.mode, modeDevicePlugin, modeDRA)
	}

	reg := newRegistry()
	opts := plugin.Options{
		Config: cfg, Roots: roots, KubeletDir: f.kubeletDir, NodeName: f.nodeName, CDIDir: f.cdiDir,
		Log: log, Registry: reg, Version: version, OtherConfig: other, PodResourcesSocket: f.podResourcesSocket,
	}
	if f.nodeName != "" {
		sink, err := kubeSink(f.kubeconfig, f.nodeName)
		if err != nil {
			return err
		}
		opts.Inventory, opts.Pods = sink, sink.Client
	} else {
		log.Info("No --node-name: node labels and the RDMANode inventory are not published")
	}
	p, err := plugin.New(opts)
	if err != nil {
		return err
	}
	log.Info("Starting", "version", version, "resources", p.Resources(), "sysRoot", f.sysRoot, "devRoot", f.devRoot,
		"node", f.nodeName, "cdiDir", f.cdiDir)

	stop, err := serveMetrics(f.metricsAddr, reg, func(context.Context) error { return nil }, log)
	if err != nil {
		return err
	}
	defer stop()
	if err := p.Run(ctx); err != nil {
		return err
	}
	log.Info("Shut down")
	return nil
}

func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// serveMetrics serves /metrics from reg and /healthz (healthy's error: 503 with the
// reason) on addr until stop is called; an empty addr serves nothing.
func serveMetrics(addr string, reg *prometheus.Registry, healthy func(context.Context) error, log logr.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics address: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/healthz", healthzHandler(healthy))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(err, "Metrics server")
		}
	}()
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
	}, nil
}

// healthzHandler answers 200 "ok" when healthy returns nil, else 503 with its error.
func healthzHandler(healthy func(context.Context) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 4*time.Second)
		defer cancel()
		if err := healthy(ctx); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	var rc *rest.Config
	var err error
	if kubeconfig != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		rc, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, err
	}
	rc.UserAgent = "ringcap-plugin/" + version
	return rc, nil
}

// runDRA runs the DRA driver until ctx is done.
func runDRA(ctx context.Context, f flags, cfg, other *plugin.Config, roots rdma.Roots, log logr.Logger) error {
	if f.nodeName == "" {
		return errors.New("--mode dra needs --node-name (or $NODE_NAME): the ResourceSlice belongs to the node")
	}
	cdiDir := f.cdiDir
	if cdiDir == "" {
		cdiDir = "/var/run/cdi"
	}
	rc, err := restConfig(f.kubeconfig)
	if err != nil {
		return fmt.Errorf("API client config for the DRA driver (set --kubeconfig): %w", err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	reg := newRegistry()
	d, err := dra.New(dra.Options{Config: cfg, Roots: roots, NodeName: f.nodeName, CDIDir: cdiDir, Client: cs, Log: log,
		PluginDir: f.pluginsDir, RegistryDir: f.registryDir, OtherConfig: other, PodUID: types.UID(f.podUID),
		Registry: reg, RegistrationTimeout: f.registrationTimeout})
	if err != nil {
		return err
	}
	log.Info("Starting DRA driver", "version", version, "driver", dra.DriverName, "node", f.nodeName, "cdiDir", cdiDir,
		"pluginsDir", f.pluginsDir, "registryDir", f.registryDir, "podUID", f.podUID, "prepared", len(d.Prepared()), "metricsAddr", f.metricsAddr)
	stop, err := serveMetrics(f.metricsAddr, reg, d.Healthy, log)
	if err != nil {
		return err
	}
	defer stop()
	if err := d.Run(ctx); err != nil {
		return err
	}
	log.Info("Shut down")
	return nil
}

func kubeSink(kubeconfig, node string) (*plugin.KubeSink, error) {
	rc, err := restConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("API client config for publishing the inventory (set --kubeconfig, or drop --node-name): %w", err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	dc, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	return &plugin.KubeSink{Client: cs, Dynamic: dc, NodeName: node}, nil
}

func printConfig(w io.Writer, cfg, other *plugin.Config, roots rdma.Roots) error {
	devs, skipped, err := rdma.Discover(roots)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "config: version %s, rescan every %s\n", cfg.Version, cfg.RescanInterval.Duration)
	assigned, err := cfg.Assign(devs)
	if err != nil {
		return err
	}
	for _, p := range cfg.Pools {
		fmt.Fprintf(&b, "pool %s%s (%s):", plugin.ResourcePrefix, p.Name, p.Sharing.Mode)
		for _, d := range assigned[p.Name] {
			fmt.Fprintf(&b, " %s", d.Name)
		}
		b.WriteString("\n")
		for _, d := range assigned[p.Name] {
			for _, port := range d.Ports {
				b.WriteString(portLine(d, port, p.GIDPolicy.Policy()))
			}
		}
	}
	for _, s := range skipped {
		fmt.Fprintln(&b, "skipped:", s.String())
	}
	for _, o := range cfg.Overlaps(other, devs) {
		fmt.Fprintf(&b, "selected by both: %s (pool %s and --other-config's pool %s): the start is refused\n", o.Device, o.Pool, o.OtherPool)
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// portLine is the GID a pool's pods get on a port, or why none (an EFA gets libfabric's
// environment instead).
func portLine(d rdma.Device, port rdma.Port, pol rdma.GIDPolicy) string {
	if env := plugin.OFIEnv(d); env != nil {
		keys := slices.Sorted(maps.Keys(env))
		var kv []string
		for _, k := range keys {
			kv = append(kv, k+"="+env[k])
		}
		return fmt.Sprintf("  %s port %d %s: EFA, no GID: %s\n", d.Name, port.Num, port.State, strings.Join(kv, " "))
	}
	g, reason, err := rdma.ChooseGID(port, pol)
	if err != nil {
		return fmt.Sprintf("  %s port %d %s: no GID: %v\n", d.Name, port.Num, port.State, err)
	}
	return fmt.Sprintf("  %s port %d %s: GID %d (%s)\n", d.Name, port.Num, port.State, g.Index, reason)
}
