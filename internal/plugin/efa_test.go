package plugin

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// The EFA tree (pkg/rdma/testdata/make-efa-tree.sh) holds two AWS Elastic Fabric
// Adapters as the kernel's efa driver shows them: link layer unspecified, no RoCE GID,
// a uverbs node each and rdma_cm.

// TestEFAPool: a pool of EFA devices (selected by driver) is advertised, watched and
// allocated like any other, with no GID error; its environment tells the pod to use
// libfabric's efa provider on the allocated device's domain, and no GID index.
func TestEFAPool(t *testing.T) {
	cfg, err := ParseConfig([]byte("version: v1\npools: [{name: efa, selector: {drivers: [efa], linkLayers: [Unspecified]}}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	cdi := t.TempDir()
	h := startHarnessTree(t, "efa", cfg, func(o *Options) { o.CDIDir = cdi })
	r := h.kubelet.registration(t)
	if r.ResourceName != "ringcap.io/efa" {
		t.Fatalf("registration %+v", r)
	}
	c := h.client(r)
	next := h.watch(c)
	m := next(func(m map[string]*pluginapi.Device) bool { return len(m) == 2 })
	if got := describe(m); got != "efa_0=Healthy efa_1=Healthy" {
		t.Fatalf("devices: %s", got)
	}
	if numa(m["efa_0"]) != 0 || numa(m["efa_1"]) != 1 {
		t.Errorf("topology: efa_0 %v efa_1 %v", m["efa_0"].Topology, m["efa_1"].Topology)
	}

	resp, err := c.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"efa_1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	car := resp.ContainerResponses[0]
	if got, want := specPaths(car), []string{"/dev/infiniband/uverbs1", "/dev/infiniband/rdma_cm"}; !reflect.DeepEqual(got, want) {
		t.Errorf("device specs %v, want %v", got, want)
	}
	wantEnv := map[string]string{
		EnvDevice: "efa_1", EnvDevices: "efa_1", EnvPort: "1",
		EnvTransport: "ofi", EnvOFIProvider: "efa", EnvOFIDomain: "efa_1-rdm",
		EnvGIDReason: "EFA device: no RoCE GID is used; libfabric's efa provider addresses it (domain efa_1-rdm)",
	}
	if !reflect.DeepEqual(car.Envs, wantEnv) {
		t.Errorf("env\n%v\nwant\n%v", car.Envs, wantEnv)
	}
	if len(car.CdiDevices) != 1 || car.CdiDevices[0].Name != "ringcap.io/efa=efa_1" {
		t.Errorf("CDI devices %v", car.CdiDevices)
	}
	b, err := os.ReadFile(filepath.Join(cdi, "ringcap.io-efa.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name": "efa_0"`, `"RINGCAP_OFI_PROVIDER=efa"`, `"RINGCAP_OFI_DOMAIN=efa_0-rdm"`, `"RINGCAP_TRANSPORT=ofi"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("CDI spec lacks %s:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), EnvGIDIndex) {
		t.Errorf("CDI spec names a GID index:\n%s", b)
	}

	// Health follows the port state, as for any device.
	h.setPort("efa_0", "DOWN")
	next(healthIs(map[string]string{"efa_0": "Unhealthy", "efa_1": "Healthy"}))
}

// TestEFAInventory: the node's inventory lists the EFA devices with the link layer the
// driver leaves unspecified, no chosen GID and a reason instead of a GID error; the node
// is labelled as having RDMA but not RoCE v2.
func TestEFAInventory(t *testing.T) {
	h := startHarnessTree(t, "efa", nil, nil)
	h.kubelet.registration(t)
	inv := h.sink.waitFor(t, func(inv *Inventory) bool { return len(inv.Status.Devices) == 2 })
	if inv.Labels[LabelRDMA] != "true" || inv.Labels[LabelRoCEv2] != "" {
		t.Errorf("labels %v", inv.Labels)
	}
	d := inv.Status.Devices[0]
	if d.Name != "efa_0" || d.Driver != "efa" || d.NodeType != "unspecified" || d.Health != "Healthy" || len(d.Ports) != 1 {
		t.Fatalf("device %+v", d)
	}
	p := d.Ports[0]
	if p.LinkLayer != "Unspecified" || p.ChosenGIDIndex != nil || !strings.HasPrefix(p.GIDReason, "EFA device:") {
		t.Errorf("port %+v", p)
	}
	if len(inv.Status.Conditions) != 1 || inv.Status.Conditions[0].Status != "True" {
		t.Errorf("conditions %+v", inv.Status.Conditions)
	}
}
