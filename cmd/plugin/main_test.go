package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/ringcap/ringcap/internal/plugin"
	"github.com/ringcap/ringcap/pkg/rdma"
)

const testdata = "../../pkg/rdma/testdata/pci"

// TestMain lets the test binary act as the plugin binary (for the SIGTERM test).
func TestMain(m *testing.M) {
	if os.Getenv("RINGCAP_PLUGIN_MAIN") == "1" {
		os.Args = append([]string{"plugin"}, strings.Split(os.Getenv("RINGCAP_PLUGIN_ARGS"), " ")...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type kubelet struct {
	pluginapi.UnimplementedRegistrationServer
	regs chan string
}

func (k *kubelet) Register(_ context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	k.regs <- r.ResourceName + " " + r.Endpoint
	return &pluginapi.Empty{}, nil
}

// TestSIGTERM runs the plugin as a process with a config file, lets it register with
// a fake kubelet, sends SIGTERM and expects exit status 0 with its socket removed.
func TestSIGTERM(t *testing.T) {
	if os.Getenv("RINGCAP_VM") == "1" {
		t.Skip("testdata-tree test: runs on the host (make test)")
	}
	dir, err := os.MkdirTemp("", "rcm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	l, err := net.Listen("unix", filepath.Join(dir, "kubelet.sock"))
	if err != nil {
		t.Fatal(err)
	}
	k := &kubelet{regs: make(chan string, 4)}
	srv := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(srv, k)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("version: v1\npools: [{name: rdma}, {name: rdma-shared, selector: {devices: [mlx5_7]}, sharing: {mode: shared, maxPodsPerDevice: 2}}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "RINGCAP_PLUGIN_MAIN=1", "NODE_NAME=",
		"RINGCAP_PLUGIN_ARGS=--config "+cfg+" --sys-root "+testdata+"/sys --dev-root "+testdata+"/dev --kubelet-dir "+dir+" --metrics-addr 127.0.0.1:0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for len(got) < 2 {
		select {
		case r := <-k.regs:
			got[r] = true
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("registrations %v; stderr:\n%s", got, stderr.String())
		}
	}
	if !got["ringcap.io/rdma ringcap-rdma.sock"] || !got["ringcap.io/rdma-shared ringcap-rdma-shared.sock"] {
		t.Errorf("registrations %v", got)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v; stderr:\n%s", err, stderr.String())
	}
	for _, s := range []string{"ringcap-rdma.sock", "ringcap-rdma-shared.sock"} {
		if _, err := os.Stat(filepath.Join(dir, s)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after SIGTERM: %v", s, err)
		}
	}
	if !strings.Contains(stderr.String(), `"msg":"Shut down"`) {
		t.Errorf("no shutdown log:\n%s", stderr.String())
	}
}

func TestBadConfigRefused(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte("version: v1\npools: [{name: rdma, sharing: {mode: shard}}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), flags{config: cfg, sysRoot: "/nonexistent", devRoot: "/nonexistent", kubeletDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "pools[0].sharing.mode") {
		t.Fatalf("err = %v", err)
	}
}

// TestModeFlag: an unknown --mode and --mode dra without a node name are refused
// before anything starts.
func TestModeFlag(t *testing.T) {
	for args, want := range map[string]string{
		"--mode=x":                `--mode "x": want deviceplugin or dra`,
		"--mode=dra --node-name=": "--mode dra needs --node-name",
		"--mode=dra --node-name=n --cdi-dir=/nonexistent/x --kubeconfig=/nonexistent/kubeconfig": "API client config for the DRA driver",
	} {
		cmd := newCmd()
		cmd.SetArgs(append(strings.Fields(args), "--sys-root="+testdata+"/sys", "--dev-root="+testdata+"/dev", "--metrics-addr="))
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("plugin %s: %v, want an error containing %q", args, err, want)
		}
	}
}

// --print-config on the EFA tree says which environment the pods get instead of a GID
// error; on the PCI tree it names the GIDs.
func TestPrintConfig(t *testing.T) {
	if os.Getenv("RINGCAP_VM") == "1" {
		t.Skip("testdata-tree test: runs on the host (make test)")
	}
	for _, tc := range []struct {
		tree string
		want []string
	}{
		{"../../pkg/rdma/testdata/efa", []string{
			"pool ringcap.io/rdma (exclusive): efa_0 efa_1\n",
			"  efa_0 port 1 ACTIVE: EFA, no GID: RINGCAP_OFI_DOMAIN=efa_0-rdm RINGCAP_OFI_PROVIDER=efa RINGCAP_TRANSPORT=ofi\n",
		}},
		{testdata, []string{"  mlx5_0 port 1 ACTIVE: GID 3 (RoCE v2 GID with an IPv4-mapped address: 10.0.0.5 on enp3s0f0 (port 1))\n"}},
	} {
		var b bytes.Buffer
		if err := printConfig(&b, plugin.DefaultConfig(), nil, rdma.Roots{Sys: tc.tree + "/sys", Dev: tc.tree + "/dev"}); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: --print-config lacks %q:\n%s", tc.tree, w, b.String())
			}
		}
		if strings.Contains(b.String(), "efa_0 port 1 ACTIVE: no GID") {
			t.Errorf("GID error for an EFA:\n%s", b.String())
		}
	}
}

// TestOtherConfig: --other-config is read and checked, and a device it selects as well as
// --config refuses the start, naming the device and both pools.
func TestOtherConfig(t *testing.T) {
	if os.Getenv("RINGCAP_VM") == "1" {
		t.Skip("testdata-tree test: runs on the host (make test)")
	}
	dir := t.TempDir()
	other, bad := filepath.Join(dir, "dra.yaml"), filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(other, []byte("version: v1\npools: [{name: soft, selector: {devices: [mlx5_0]}}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("version: v1\npools: [{name: soft, selektor: {}}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := flags{mode: modeDevicePlugin, otherConfig: other, sysRoot: testdata + "/sys", devRoot: testdata + "/dev", kubeletDir: dir}
	err := run(context.Background(), f)
	if !errors.Is(err, plugin.ErrOverlap) || !strings.Contains(err.Error(), `mlx5_0 (the device plugin's pool "rdma" and the DRA driver's pool "soft")`) {
		t.Errorf("overlapping --other-config: %v", err)
	}
	f.otherConfig = bad
	if err := run(context.Background(), f); err == nil || !strings.Contains(err.Error(), "--other-config") || !strings.Contains(err.Error(), "selektor") {
		t.Errorf("invalid --other-config: %v", err)
	}
	otherCfg, err := plugin.LoadConfig(other)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := printConfig(&b, plugin.DefaultConfig(), otherCfg, rdma.Roots{Sys: testdata + "/sys", Dev: testdata + "/dev"}); err != nil {
		t.Fatal(err)
	}
	if want := "selected by both: mlx5_0 (pool rdma and --other-config's pool soft): the start is refused\n"; !strings.Contains(b.String(), want) {
		t.Errorf("--print-config with --other-config lacks %q:\n%s", want, b.String())
	}
}

// TestMetricsServer: /metrics serves the registry and /healthz answers 200 while the
// check passes and 503 with its reason when it fails; stop closes the listener.
func TestMetricsServer(t *testing.T) {
	reg := newRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "ringcap_test_total", Help: "x"})
	reg.MustRegister(c)
	c.Inc()
	var sick atomic.Pointer[error]
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	stop, err := serveMetrics(addr, reg, func(context.Context) error {
		if e := sick.Load(); e != nil {
			return *e
		}
		return nil
	}, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/metrics"); code != http.StatusOK || !strings.Contains(body, "ringcap_test_total 1") || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics %d:\n%s", code, body)
	}
	if code, body := get("/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz while healthy: %d %q", code, body)
	}
	e := errors.New("GetInfo on registration socket /x/reg.sock: connection refused")
	sick.Store(&e)
	if code, body := get("/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "registration socket") {
		t.Errorf("/healthz while sick: %d %q", code, body)
	}
	stop()
	if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
		_ = resp.Body.Close()
		t.Error("/healthz still answers after stop")
	}
}

// With POD_UID and NODE_NAME set, as in the chart's pods, --help shows each flag's default
// once: the usage's "(default $POD_UID)", not the variable's value as well.
func TestHelpOneDefault(t *testing.T) {
	t.Setenv("POD_UID", "0b4e-uid")
	t.Setenv("NODE_NAME", "node-a")
	cmd := newCmd()
	for _, name := range []string{"pod-uid", "node-name"} {
		line := ""
		for _, l := range strings.Split(cmd.Flags().FlagUsages(), "\n") {
			if strings.Contains(l, "--"+name+" ") {
				line = l
			}
		}
		if strings.Count(line, "(default") != 1 || strings.Contains(line, "0b4e-uid") || strings.Contains(line, "node-a") {
			t.Errorf("--%s help %q, want one default naming the environment variable", name, line)
		}
	}
	if err := cmd.Flags().Parse(nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := cmd.Flags().GetString("pod-uid"); got != "0b4e-uid" {
		t.Errorf("--pod-uid without the flag is %q, want $POD_UID", got)
	}
}

// The device plugin asks the kubelet's PodResources API at its default socket unless
// told otherwise; an empty --pod-resources-socket turns the per-capture series off.
func TestPodResourcesSocketFlag(t *testing.T) {
	cmd := newCmd()
	fl := cmd.Flags().Lookup("pod-resources-socket")
	if fl == nil || fl.DefValue != "/var/lib/kubelet/pod-resources/kubelet.sock" {
		t.Fatalf("--pod-resources-socket: %+v", fl)
	}
}
