//go:build envtest

package dra

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"sigs.k8s.io/yaml"

	"github.com/ringcap/ringcap/internal/testenv"
	"github.com/ringcap/ringcap/pkg/rdma"
	"github.com/ringcap/ringcap/pkg/rdma/rdmatest"
)

const (
	wait    = 60 * time.Second
	chartNS = "ringcap-system"
	saName  = "rc-ringcap-dra"
)

// chartDRARole renders the chart with plugin.mode=dra and returns the driver's ClusterRole.
func chartDRARole(t *testing.T) rbacv1.ClusterRole {
	t.Helper()
	var cr rbacv1.ClusterRole
	chartObject(t, "ClusterRole", saName, &cr)
	return cr
}

// chartObject renders the chart with plugin.mode=dra and decodes its object of kind
// and name into out.
func chartObject(t *testing.T, kind, name string, out any) {
	t.Helper()
	helm := "/var/tmp/ringcap/bin/helm"
	if p, err := exec.LookPath("helm"); err == nil {
		helm = p
	}
	cmd := exec.Command(helm, "template", "rc", filepath.Join(testenv.RepoRoot(), "charts", "ringcap"), "--namespace", chartNS, "--set", "plugin.mode=dra")
	var rendered, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &rendered, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm template: %v: %s", err, stderr.String())
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(&rendered, 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		if m["kind"] != kind || m["metadata"].(map[string]any)["name"] != name {
			continue
		}
		b, _ := yaml.Marshal(m)
		if err := yaml.UnmarshalStrict(b, out); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("the chart renders no %s %s", kind, name)
}

// driverClient is a client acting as the chart's service account, bound to the
// chart's ClusterRole and nothing else.
func driverClient(t *testing.T, env *testenv.Env) kubernetes.Interface {
	t.Helper()
	grantChartRole(t, env, chartDRARole(t))
	return kubernetes.NewForConfigOrDie(asDriver(env, nil))
}

// asDriver is a connection acting as the chart's service account, with the user
// extras extra (as a pod-bound token gives).
func asDriver(env *testenv.Env, extra map[string][]string) *rest.Config {
	pc := rest.CopyConfig(env.Config)
	pc.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + chartNS + ":" + saName,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + chartNS, "system:authenticated"}, Extra: extra}
	return pc
}

// grantChartRole creates cr and binds it to the chart's service account.
func grantChartRole(t *testing.T, env *testenv.Env, cr rbacv1.ClusterRole) {
	t.Helper()
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(env.Config)
	cr.ResourceVersion = ""
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: saName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: saName, Namespace: chartNS}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "rdra")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// TestDriverOnAPIServer runs the driver (kubeletplugin helper, PCI testdata tree) as
// the chart's service account against a real kube-apiserver: its ResourceSlice is
// accepted and follows port changes; called over its sockets as the kubelet calls it
// (registration, NodePrepareResources, NodeUnprepareResources) it reads and prepares
// an allocated claim, writes the claim's status.devices and removes the CDI spec; the
// chart's role allows nothing obviously more.
func TestDriverOnAPIServer(t *testing.T) {
	env, admin := startAPIServer(t, node)
	ctx := context.Background()
	cs := driverClient(t, env)

	roots := rdma.Roots{Sys: rdmatest.CopyDir(t, pciTree+"/sys"), Dev: rdmatest.CopyDir(t, pciTree+"/dev")}
	dir := shortDir(t)
	cfg := defaultConfigFast()
	d, err := New(Options{Config: cfg, Roots: roots, NodeName: node, CDIDir: filepath.Join(dir, "cdi"), Client: cs,
		Log: testenv.Logger(t), PluginDir: filepath.Join(dir, "p"), RegistryDir: filepath.Join(dir, "r")})
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, d)

	slice := waitSlice(t, admin, []string{"mlx5-0-p1", "mlx5-2-p1"})
	if slice.Spec.NodeName == nil || *slice.Spec.NodeName != node || slice.Spec.Pool.Name != node || len(slice.OwnerReferences) != 1 || slice.OwnerReferences[0].Kind != "Node" {
		t.Errorf("slice spec %+v owners %+v", slice.Spec, slice.OwnerReferences)
	}
	var dev0 resourceapi.Device
	for _, dv := range slice.Spec.Devices {
		if dv.Name == "mlx5-0-p1" {
			dev0 = dv
		}
	}
	if g := dev0.Attributes["ringcap.io/gid"].StringValue; g == nil || *g != "10.0.0.5" {
		t.Errorf("mlx5-0-p1 attributes on the server: %+v", dev0.Attributes)
	}

	// Ports change: the slice follows within the rescan interval.
	rdmatest.SetPortState(t, roots.Sys, "mlx5_1", 1, "ACTIVE")
	rdmatest.SetPortState(t, roots.Sys, "mlx5_0", 1, "DOWN")
	waitSlice(t, admin, []string{"mlx5-1-p1", "mlx5-2-p1"})

	// An allocated claim: the driver reads it (as the kubelet plugin helper does),
	// prepares it and writes its status.devices.
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "work"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "rdma", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "ringcap-rdma"}}}}}}
	c, err = admin.ResourceV1().ResourceClaims("work").Create(ctx, c, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
		Request: "rdma", Driver: DriverName, Pool: node, Device: "mlx5-2-p1"}}}}
	if _, err := admin.ResourceV1().ResourceClaims("work").UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// As the kubelet: registration, then NodePrepareResources over the driver's socket
	// (the helper reads the claim with the driver's credentials).
	info := registration(t, filepath.Join(dir, "r", DriverName+"-reg.sock"))
	if info.Name != DriverName || info.Endpoint != filepath.Join(dir, "p", "dra.sock") {
		t.Errorf("registration info %+v", info)
	}
	kubelet := drapb.NewDRAPluginClient(dial(t, info.Endpoint))
	pbClaim := &drapb.Claim{Namespace: "work", Name: "c1", Uid: string(c.UID)}
	prep, err := kubelet.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{pbClaim}})
	if err != nil {
		t.Fatal(err)
	}
	pr := prep.Claims[string(c.UID)]
	if pr == nil || pr.Error != "" || len(pr.Devices) != 1 || pr.Devices[0].DeviceName != "mlx5-2-p1" ||
		!slices.Equal(pr.Devices[0].CdiDeviceIds, []string{CDIDeviceID(c.UID, "mlx5-2-p1")}) {
		t.Fatalf("NodePrepareResources: %+v", pr)
	}
	if _, err := os.Stat(ClaimSpecPath(filepath.Join(dir, "cdi"), c.UID)); err != nil {
		t.Errorf("no CDI spec after prepare: %v", err)
	}
	st, err := admin.ResourceV1().ResourceClaims("work").Get(ctx, "c1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Status.Devices) != 1 {
		t.Fatalf("claim status.devices = %+v, want the prepared device", st.Status.Devices)
	}
	sd := st.Status.Devices[0]
	// The netdev is in data; networkData (the interface as the pod sees it, KEP-4817)
	// is left out: the netdev stays in the host's network namespace.
	if sd.Driver != DriverName || sd.Device != "mlx5-2-p1" || sd.Data == nil ||
		!strings.Contains(string(sd.Data.Raw), `"gid":"fe80::c42:a103:70:1b2c"`) || !strings.Contains(string(sd.Data.Raw), `"gidIndex":0`) ||
		!strings.Contains(string(sd.Data.Raw), `"netdev":"ib0"`) || sd.NetworkData != nil {
		t.Errorf("claim status device %+v data %s", sd, sd.Data.Raw)
	}

	unprep, err := kubelet.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: []*drapb.Claim{pbClaim}})
	if err != nil || unprep.Claims[string(c.UID)] == nil || unprep.Claims[string(c.UID)].Error != "" {
		t.Fatalf("NodeUnprepareResources: %+v %v", unprep, err)
	}
	if _, err := os.Stat(ClaimSpecPath(filepath.Join(dir, "cdi"), c.UID)); !os.IsNotExist(err) {
		t.Errorf("CDI spec still there after unprepare (%v)", err)
	}

	// Nothing obviously more: no secrets, pods, claim specs, nodes, device classes.
	forbidden := map[string]error{}
	_, forbidden["list secrets"] = cs.CoreV1().Secrets("work").List(ctx, metav1.ListOptions{})
	_, forbidden["create pod"] = cs.CoreV1().Pods("work").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}, metav1.CreateOptions{})
	_, forbidden["update claim"] = cs.ResourceV1().ResourceClaims("work").Update(ctx, st, metav1.UpdateOptions{})
	_, forbidden["list claims"] = cs.ResourceV1().ResourceClaims("work").List(ctx, metav1.ListOptions{})
	forbidden["delete node"] = cs.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{})
	_, forbidden["create device class"] = cs.ResourceV1().DeviceClasses().Create(ctx, &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	for what, err := range forbidden {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s as the driver: %v, want Forbidden", what, err)
		}
	}
}

func dial(t *testing.T, sock string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// registration asks the driver's registration socket for its info, as the kubelet's
// plugin watcher does, and reports success back.
func registration(t *testing.T, sock string) *registerapi.PluginInfo {
	t.Helper()
	rc := registerapi.NewRegistrationClient(dial(t, sock))
	info, err := rc.GetInfo(context.Background(), &registerapi.InfoRequest{})
	if err != nil {
		t.Fatalf("GetInfo: %v", err)
	}
	if _, err := rc.NotifyRegistrationStatus(context.Background(), &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatalf("NotifyRegistrationStatus: %v", err)
	}
	return info
}

// waitSlice waits until the node's ResourceSlice of the driver lists exactly names.
func waitSlice(t *testing.T, admin kubernetes.Interface, names []string) resourceapi.ResourceSlice {
	t.Helper()
	deadline := time.Now().Add(wait)
	var last []string
	for time.Now().Before(deadline) {
		l, err := admin.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{FieldSelector: "spec.driver=" + DriverName})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) == 1 {
			last = nil
			for _, d := range l.Items[0].Spec.Devices {
				last = append(last, d.Name)
			}
			slices.Sort(last)
			if reflect.DeepEqual(last, names) {
				return l.Items[0]
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("ResourceSlice never listed %v; last %v", names, last)
	return resourceapi.ResourceSlice{}
}
