package dra

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/ringcap/ringcap/internal/testenv"
	"github.com/ringcap/ringcap/internal/testkit"
)

// TestRunStops runs the driver with an in-memory API (client-go's fake clientset;
// the real API server is the envtest tier's) until its slice is written, then cancels
// it: Run returns nil, its sockets are gone and no goroutine is left behind; alone, and
// as one pod of a rolling update (its own socket names, the state checks' lock).
func TestRunStops(t *testing.T) {
	testkit.HostOnly(t)
	for _, uid := range []types.UID{"", "pod-1"} {
		t.Run("podUID="+string(uid), func(t *testing.T) { runAndStop(t, uid) })
	}
}

func runAndStop(t *testing.T, uid types.UID) {
	base := goleak.IgnoreCurrent()
	cs := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, UID: "node-uid"}})
	dir, err := os.MkdirTemp("", "rdra")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	d, err := New(Options{Config: defaultConfigFast(), Roots: treeRoots(rxeTree), NodeName: node, CDIDir: filepath.Join(dir, "cdi"),
		Client: cs, Log: testenv.Logger(t), PluginDir: filepath.Join(dir, "p"), RegistryDir: filepath.Join(dir, "r"), PodUID: uid})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()

	w, err := cs.ResourceV1().ResourceSlices().Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		t.Logf("slice %s", ev.Type)
	case err := <-done:
		t.Fatalf("Run returned before publishing: %v", err)
	}
	w.Stop()
	// The probe finds the registration socket the helper made (its rolling-update name
	// with a pod UID) and the DRA socket it names.
	if err := d.Healthy(context.Background()); err != nil {
		t.Errorf("Healthy while running: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	socks := []string{filepath.Join(dir, "p", "dra.sock"), filepath.Join(dir, "r", DriverName+"-reg.sock")}
	if uid != "" {
		socks = []string{filepath.Join(dir, "p", "dra-"+string(uid)+".sock"),
			filepath.Join(dir, "r", kubeletplugin.RollingUpdateRegistrarSocketFile(filepath.Join(dir, "r"), DriverName, uid))}
		if _, err := os.Stat(filepath.Join(dir, "p", lockFile)); err != nil {
			t.Errorf("the state checks did not take the lock file: %v", err)
		}
	}
	for _, s := range socks {
		if _, err := os.Stat(s); !os.IsNotExist(err) {
			t.Errorf("socket %s left behind (%v)", s, err)
		}
	}
	if err := goleak.Find(base); err != nil { // Find waits a little for exiting goroutines
		t.Error(err)
	}
}

// patience bounds a failing wait (nothing here measures speed).
const patience = 60 * time.Second

// runDriver starts Run with an in-memory API and a test registry until the test ends
// (then it checks Run returned nil); done gets Run's result.
func runDriver(t *testing.T, timeout time.Duration) (d *Driver, dir string, reg *prometheus.Registry, done chan error) {
	t.Helper()
	testkit.HostOnly(t)
	cs := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, UID: "node-uid"}})
	dir, err := os.MkdirTemp("", "rdra")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	reg = prometheus.NewRegistry()
	d, err = New(Options{Config: defaultConfigFast(), Roots: treeRoots(rxeTree), NodeName: node, CDIDir: filepath.Join(dir, "cdi"),
		Client: cs, Log: testenv.Logger(t), PluginDir: filepath.Join(dir, "p"), RegistryDir: filepath.Join(dir, "r"),
		Registry: reg, RegistrationTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done = make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(cancel)
	return d, dir, reg, done
}

// waitHealthy waits until the driver answers on both sockets (or Run ends).
func waitHealthy(t *testing.T, d *Driver, done chan error) {
	t.Helper()
	var last error
	err := testkit.Eventually(patience, func() error {
		select {
		case err := <-done:
			return fmt.Errorf("Run returned: %w", err)
		default:
			return nil
		}
	}, func() (bool, string) {
		last = d.Healthy(context.Background())
		return last == nil, fmt.Sprint(last)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// kubeletRegisters answers the driver's registration socket as the kubelet's plugin
// watcher does: GetInfo, then the registration's outcome.
func kubeletRegisters(t *testing.T, sock string, ok bool, why string) {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	rc := registerapi.NewRegistrationClient(conn)
	if _, err := rc.GetInfo(context.Background(), &registerapi.InfoRequest{}); err != nil {
		t.Fatal(err)
	}
	_, err = rc.NotifyRegistrationStatus(context.Background(), &registerapi.RegistrationStatus{PluginRegistered: ok, Error: why})
	if ok && err != nil {
		t.Fatal(err)
	}
}

// TestHealthyFailsWithoutSocket: Healthy (the pod's /healthz) answers once Run serves
// both sockets, after the kubelet registered the driver (the registration metric
// follows), and fails naming the socket when the DRA socket or the registration
// socket is gone.
func TestHealthyFailsWithoutSocket(t *testing.T) {
	d, dir, reg, done := runDriver(t, time.Hour)
	waitHealthy(t, d, done)
	kubeletRegisters(t, filepath.Join(dir, "r", DriverName+"-reg.sock"), true, "")
	if err := testkit.Eventually(patience, nil, func() (bool, string) {
		v := testutil.ToFloat64(d.metrics.registered)
		return v == 1, fmt.Sprintf("ringcap_dra_registered %v", v)
	}); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, "ringcap_dra_request_seconds"); n != 0 {
		t.Errorf("the health probe's empty NodePrepareResources was timed (%d series)", n)
	}

	for _, tc := range []struct{ sock, want string }{
		{filepath.Join(dir, "p", "dra.sock"), "DRA socket"},
		{filepath.Join(dir, "r", DriverName+"-reg.sock"), "registration socket"},
	} {
		if err := os.Remove(tc.sock); err != nil {
			t.Fatal(err)
		}
		if err := d.Healthy(context.Background()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Healthy without %s: %v, want an error naming the %s", tc.sock, err, tc.want)
		}
	}
}

// TestRunEndsUnregistered: without a kubelet calling its registration socket, Run
// ends with ErrNotRegistered saying so once the registration timeout passes, and
// leaves no goroutine or socket behind.
func TestRunEndsUnregistered(t *testing.T) {
	base := goleak.IgnoreCurrent()
	_, dir, _, done := runDriver(t, 200*time.Millisecond)
	err := <-done
	if !errors.Is(err, ErrNotRegistered) || !strings.Contains(err.Error(), "never called the registration socket") {
		t.Fatalf("Run = %v, want ErrNotRegistered saying the kubelet never called", err)
	}
	for _, s := range []string{filepath.Join(dir, "p", "dra.sock"), filepath.Join(dir, "r", DriverName+"-reg.sock")} {
		if _, err := os.Stat(s); !os.IsNotExist(err) {
			t.Errorf("socket %s left behind (%v)", s, err)
		}
	}
	if err := goleak.Find(base); err != nil {
		t.Error(err)
	}
}

// TestRegistrationWaitSays: what the wait reports after the kubelet registered,
// refused, only asked, or never called.
func TestRegistrationWaitSays(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func(r *registrationWatch)
		want string // "" : registered
	}{
		{"registered", func(r *registrationWatch) { r.notified(&registerapi.RegistrationStatus{PluginRegistered: true}) }, ""},
		{"refused", func(r *registrationWatch) {
			r.notified(&registerapi.RegistrationStatus{Error: "unsupported versions"})
		}, "it refused: unsupported versions"},
		{"asked", func(r *registrationWatch) {
			_, _ = r.intercept(context.Background(), &registerapi.InfoRequest{}, nil, func(context.Context, any) (any, error) { return nil, nil })
		}, "never reported the registration"},
		{"never", func(*registrationWatch) {}, "never called the registration socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []bool
			r := newRegistrationWatch(func(ok bool) { got = append(got, ok) })
			tc.do(r)
			err := r.wait(context.Background(), time.Millisecond)
			if tc.want == "" {
				if err != nil || !slices.Equal(got, []bool{true}) {
					t.Errorf("wait = %v, outcomes %v; want nil after registration", err, got)
				}
				return
			}
			if !errors.Is(err, ErrNotRegistered) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("wait = %v, want ErrNotRegistered saying %q", err, tc.want)
			}
		})
	}
}

// TestHandleErrorEndsRunOnFatal: a recoverable background error leaves the driver
// running; one the helper does not mark recoverable ends Run with it.
func TestHandleErrorEndsRunOnFatal(t *testing.T) {
	d, _, reg, done := runDriver(t, 0)
	waitHealthy(t, d, done)
	d.HandleError(context.Background(), fmt.Errorf("publish slice: %w", kubeletplugin.ErrRecoverable), "ResourceSlice controller")
	if err := d.Healthy(context.Background()); err != nil {
		t.Fatalf("not healthy after a recoverable error: %v", err)
	}
	boom := errors.New("accept: bad file descriptor")
	d.HandleError(context.Background(), boom, "DRA gRPC server failed")
	err := <-done
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "DRA gRPC server failed") {
		t.Fatalf("Run = %v, want the fatal error with its message", err)
	}
	want := `
# HELP ringcap_dra_background_errors_total Errors the kubeletplugin helper reported in the background (publishing slices, gRPC servers).
# TYPE ringcap_dra_background_errors_total counter
ringcap_dra_background_errors_total{fatal="false"} 1
ringcap_dra_background_errors_total{fatal="true"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ringcap_dra_background_errors_total"); err != nil {
		t.Error(err)
	}
}
