//go:build envtest

package dra

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ringcap/ringcap/internal/testenv"
	"github.com/ringcap/ringcap/pkg/rdma"
)

// TestMultiPortOnAPIServer: the kube-apiserver accepts, as published, the attributes of
// a two-port HCA and of a four-port one (three ports described: 31 attributes, DRA
// allows 32), and the claim status of a prepared multi-port device lists its ports.
func TestMultiPortOnAPIServer(t *testing.T) {
	env, admin := startAPIServer(t, node)
	ctx := context.Background()
	four := hca{name: "mlx4_1", pci: "0000:06:00.0", uverbs: 4}
	for i, nd := range []string{"eth6", "eth7", "eth8", "eth9"} {
		four.ports = append(four.ports, hcaPort{state: "ACTIVE", linkLayer: rdma.LinkLayerEthernet, netdev: nd, ip4: "10.6.0." + string(rune('1'+i))})
	}
	dir := shortDir(t)
	d, err := New(Options{Config: defaultConfigFast(), Roots: writeTree(t, connectX3(), four), NodeName: node, CDIDir: filepath.Join(dir, "cdi"),
		Client: driverClient(t, env), Log: testenv.Logger(t), PluginDir: filepath.Join(dir, "p"), RegistryDir: filepath.Join(dir, "r")})
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, d)

	slice := waitSlice(t, admin, []string{"mlx4-0", "mlx4-1"})
	d.mu.Lock()
	local := d.devices
	d.mu.Unlock()
	for _, dv := range slice.Spec.Devices {
		if want := flat(local[dv.Name].Attributes()); !reflect.DeepEqual(flat(dv.Attributes), want) || want["ringcap.io/p2Netdev"] == "" {
			t.Errorf("%s attributes on the server\n got %v\nwant %v", dv.Name, flat(dv.Attributes), want)
		}
	}

	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "work"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "rdma", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "ringcap-rdma"}}}}}}
	if c, err = admin.ResourceV1().ResourceClaims("work").Create(ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
		Request: "rdma", Driver: DriverName, Pool: node, Device: "mlx4-0"}}}}
	if c, err = admin.ResourceV1().ResourceClaims("work").UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c})
	if err != nil || res[c.UID].Err != nil {
		t.Fatalf("prepare: %v %v", err, res[c.UID].Err)
	}
	st, err := admin.ResourceV1().ResourceClaims("work").Get(ctx, "c1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Status.Devices) != 1 || st.Status.Devices[0].Data == nil {
		t.Fatalf("claim status.devices = %+v", st.Status.Devices)
	}
	var data DeviceData
	if err := json.Unmarshal(st.Status.Devices[0].Data.Raw, &data); err != nil {
		t.Fatal(err)
	}
	var ports []string
	for _, p := range data.Ports {
		ports = append(ports, p.Netdev+" "+p.GID)
	}
	if data.IBDev != "mlx4_0" || data.Port != 1 || !reflect.DeepEqual(ports, []string{"eth2 10.1.0.1", "eth3 10.2.0.1"}) {
		t.Errorf("claim status data %s", st.Status.Devices[0].Data.Raw)
	}
}
