package dra

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ringcap/ringcap/internal/testenv"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// TestRunStops runs the driver with an in-memory API (client-go's fake clientset;
// the real API server is the envtest tier's) until its slice is written, then cancels
// it: Run returns nil, its sockets are gone and no goroutine is left behind; alone, and
// as one pod of a rolling update (its own socket names, the state checks' lock).
func TestRunStops(t *testing.T) {
	hostOnly(t)
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

func hostOnly(t *testing.T) {
	t.Helper()
	if os.Getenv("RINGCAP_VM") == "1" {
		t.Skip("testdata-tree test: runs on the host (make test)")
	}
}
