//go:build envtest

package dra

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/ringcap/ringcap/internal/testenv"
	"github.com/ringcap/ringcap/internal/testkit"
	"github.com/ringcap/ringcap/pkg/rdma"
	"github.com/ringcap/ringcap/pkg/rdma/rdmatest"
)

// startDriverAPIServer is startAPIServer with this node, and the driver's client (the
// chart's service account with the chart's ClusterRole).
func startDriverAPIServer(t *testing.T) (*testenv.Env, kubernetes.Interface, kubernetes.Interface) {
	t.Helper()
	env, admin := startAPIServer(t, node)
	return env, admin, driverClient(t, env)
}

// syntheticRoots is a sysfs tree with n ACTIVE devices synth0-p1.. (one port each).
func syntheticRoots(t *testing.T, n int) rdma.Roots {
	t.Helper()
	sys, dev, err := rdmatest.Synthetic(t.TempDir(), n, 4)
	if err != nil {
		t.Fatal(err)
	}
	return rdma.Roots{Sys: sys, Dev: dev}
}

// createClaim creates a claim in namespace work; allocated to dev: with that
// allocation in its status.
func createClaim(t *testing.T, admin kubernetes.Interface, name, dev string) *resourceapi.ResourceClaim {
	t.Helper()
	ctx := context.Background()
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "work"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "r", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "ringcap-rdma"}}}}}}
	c, err := admin.ResourceV1().ResourceClaims("work").Create(ctx, c, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dev == "" {
		return c
	}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
		Request: "r", Driver: DriverName, Pool: node, Device: dev}}}}
	if c, err = admin.ResourceV1().ResourceClaims("work").UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return c
}

// prepareOffline prepares the claims (their UIDs and names, each on one device) with a
// driver that has no API client, as an earlier run would have.
func prepareOffline(t *testing.T, roots rdma.Roots, cdi string, claims map[*resourceapi.ResourceClaim]string) {
	t.Helper()
	d := newDriver(t, roots, cdi)
	for c, dev := range claims {
		pc := claim(string(c.UID), c.Name, "r:"+dev)
		pc.Namespace = c.Namespace
		if r := prepare(t, d, pc)[c.UID]; r.Err != nil {
			t.Fatal(r.Err)
		}
	}
}

func deleteClaim(t *testing.T, admin kubernetes.Interface, name string) {
	t.Helper()
	if err := admin.ResourceV1().ResourceClaims("work").Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestStateChecksOnAPIServer: as the chart's service account, CheckState frees the
// claims the API no longer has (deleted; deleted and created again under the same
// name) and keeps the one it has; an unreadable spec file is left in place; both are
// told in Events on the Node. A client the API refuses (Forbidden) frees nothing.
func TestStateChecksOnAPIServer(t *testing.T) {
	env, admin, cs := startDriverAPIServer(t)
	ctx := context.Background()
	roots, cdi := syntheticRoots(t, 4), t.TempDir()
	kept, deleted, renamed, refused := createClaim(t, admin, "kept", ""), createClaim(t, admin, "deleted", ""),
		createClaim(t, admin, "renamed", ""), createClaim(t, admin, "refused", "")
	prepareOffline(t, roots, cdi, map[*resourceapi.ResourceClaim]string{kept: "synth0-p1", deleted: "synth1-p1", renamed: "synth2-p1", refused: "synth3-p1"})
	deleteClaim(t, admin, "deleted")
	deleteClaim(t, admin, "renamed")
	createClaim(t, admin, "renamed", "")
	deleteClaim(t, admin, "refused")
	badPath := ClaimSpecPath(cdi, "truncated")
	rdmatest.WriteFile(t, badPath, `{"cdiVersion":"0.6.0","kind":"ringcap.io/cl`)

	// A client the API refuses every claim lookup: nothing is freed.
	pc := rest.CopyConfig(env.Config)
	pc.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + chartNS + ":nobody", Groups: []string{"system:authenticated"}}
	refusedDriver, err := New(Options{Roots: roots, NodeName: node, CDIDir: cdi, Client: kubernetes.NewForConfigOrDie(pc), Log: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := refusedDriver.CheckState(ctx); err != nil {
		t.Fatal(err)
	}
	if got := refusedDriver.Prepared(); len(got) != 4 {
		t.Fatalf("after lookups the API refused: prepared %v, want all four kept", got)
	}

	d, err := New(Options{Roots: roots, NodeName: node, CDIDir: cdi, Client: cs, Log: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CheckState(ctx); err != nil {
		t.Fatal(err)
	}
	if got := d.Prepared(); !slices.Equal(got, []types.UID{kept.UID}) {
		t.Errorf("prepared after the check %v, want only kept (%s)", got, kept.UID)
	}
	for _, c := range []*resourceapi.ResourceClaim{deleted, renamed, refused} {
		if _, err := os.Stat(ClaimSpecPath(cdi, c.UID)); !os.IsNotExist(err) {
			t.Errorf("spec of %s still there (%v)", c.Name, err)
		}
	}
	if _, err := os.Stat(badPath); err != nil {
		t.Errorf("the unreadable spec was not left in place: %v", err)
	}
	checkNodeEvents(t, admin, map[string]int{ReasonBadCDISpec: 1, ReasonClaimFreed: 3})

	// A second check reports nothing again.
	if err := d.CheckState(ctx); err != nil {
		t.Fatal(err)
	}
	checkNodeEvents(t, admin, map[string]int{ReasonBadCDISpec: 1, ReasonClaimFreed: 3})
}

// checkNodeEvents checks the number of Events of each reason on the node.
func checkNodeEvents(t *testing.T, admin kubernetes.Interface, want map[string]int) {
	t.Helper()
	l, err := admin.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, e := range l.Items {
		if e.InvolvedObject.Kind != "Node" || e.InvolvedObject.Name != node || e.Source.Component != DriverName {
			t.Errorf("event %s about %+v from %+v", e.Name, e.InvolvedObject, e.Source)
		}
		got[e.Reason]++
		t.Logf("event %s %s: %s", e.Type, e.Reason, e.Message)
	}
	for r, n := range want {
		if got[r] != n {
			t.Errorf("%d %s events on the node, want %d", got[r], r, n)
		}
	}
}

// TestRollingUpdateOnAPIServer runs two driver instances at once on one node, as a
// rolling update does (each with its pod UID, sharing the plugin, registry and CDI
// directories and sysfs): a claim prepared through one's socket is unprepared through
// the other's, and a device prepared by one is refused to another claim by the other.
func TestRollingUpdateOnAPIServer(t *testing.T) {
	_, admin, cs := startDriverAPIServer(t)
	ctx := context.Background()
	roots, dir := syntheticRoots(t, 1), shortDir(t)
	var socks []string
	for _, uid := range []types.UID{"pod-old", "pod-new"} {
		d, err := New(Options{Config: defaultConfigFast(), Roots: roots, NodeName: node, CDIDir: filepath.Join(dir, "cdi"), Client: cs,
			Log: testenv.Logger(t).WithValues("pod", uid), PluginDir: filepath.Join(dir, "p"), RegistryDir: filepath.Join(dir, "r"), PodUID: uid})
		if err != nil {
			t.Fatal(err)
		}
		runUntilCleanup(t, d)
		waitSlice(t, admin, []string{"synth0-p1"})
		waitPublished(t, d)
		reg := filepath.Join(dir, "r", kubeletplugin.RollingUpdateRegistrarSocketFile(filepath.Join(dir, "r"), DriverName, uid))
		waitFile(t, reg)
		info := registration(t, reg)
		socks = append(socks, info.Endpoint)
	}
	if socks[0] == socks[1] {
		t.Fatalf("both instances serve %s", socks[0])
	}
	old, upd := drapb.NewDRAPluginClient(dial(t, socks[0])), drapb.NewDRAPluginClient(dial(t, socks[1]))
	a, b := createClaim(t, admin, "a", "synth0-p1"), createClaim(t, admin, "b", "synth0-p1")
	pbA, pbB := &drapb.Claim{Namespace: "work", Name: "a", Uid: string(a.UID)}, &drapb.Claim{Namespace: "work", Name: "b", Uid: string(b.UID)}

	if e := prepareErr(t, old, pbA); e != "" {
		t.Fatalf("prepare a in the old instance: %s", e)
	}
	if e := prepareErr(t, upd, pbB); !strings.Contains(e, "already prepared for claim work/a") {
		t.Errorf("the new instance prepared synth0-p1 for b while a holds it: %q", e)
	}
	un, err := upd.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: []*drapb.Claim{pbA}})
	if err != nil || un.Claims[string(a.UID)] == nil || un.Claims[string(a.UID)].Error != "" {
		t.Fatalf("unprepare a in the new instance: %+v %v", un, err)
	}
	if e := prepareErr(t, old, pbB); e != "" {
		t.Errorf("synth0-p1 freed by the new instance, but the old one says: %s", e)
	}
}

// prepareErr prepares one claim through a driver socket and returns its error ("": prepared).
func prepareErr(t *testing.T, c drapb.DRAPluginClient, claim *drapb.Claim) string {
	t.Helper()
	res, err := c.NodePrepareResources(context.Background(), &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{claim}})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Claims[claim.Uid]
	if r == nil {
		t.Fatalf("no result for claim %s: %+v", claim.Name, res)
	}
	return r.Error
}

// waitFile waits until path exists (a socket the driver is about to create).
func waitFile(t *testing.T, path string) {
	t.Helper()
	if err := testkit.Eventually(wait, nil, func() (bool, string) {
		_, err := os.Stat(path)
		return err == nil, fmt.Sprint(err)
	}); err != nil {
		t.Fatal(err)
	}
}

// waitPublished waits until d's Run has published its slices (the helper's
// ResourceSlice controller has started).
func waitPublished(t *testing.T, d *Driver) {
	t.Helper()
	if err := testkit.Eventually(wait, nil, func() (bool, string) {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.published != nil, "not published"
	}); err != nil {
		t.Fatal(err)
	}
}
