//go:build vm

package plugin

import (
	"context"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/ringcap/ringcap/test/vm/vmtest"
)

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestVMHealthFollowsRealPort runs the plugin on the VM's real sysfs with a fake
// kubelet: a Soft-RoCE device of its own (rxe9 on a new veth pair, removed at the
// end) is advertised Healthy, turns Unhealthy when its netdev goes down and Healthy
// again when it comes back; Allocate hands out exactly its uverbs device and rdma_cm.
func TestVMHealthFollowsRealPort(t *testing.T) {
	vmtest.Require(t)
	run(t, "ip", "link", "add", "vrc0", "type", "veth", "peer", "name", "vrc1")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", "vrc0").Run() })
	run(t, "ip", "link", "set", "vrc1", "up")
	run(t, "ip", "link", "set", "vrc0", "up")
	run(t, "rdma", "link", "add", "rxe9", "type", "rxe", "netdev", "vrc0")
	t.Cleanup(func() { _ = exec.Command("rdma", "link", "delete", "rxe9").Run() })

	cfg, err := ParseConfig([]byte("version: v1\npools: [{name: rdma, selector: {devices: [rxe9, rxe0]}}]"))
	if err != nil {
		t.Fatal(err)
	}
	h := startHarnessOn(t, cfg, true, nil)
	c := h.client(h.kubelet.registration(t))
	next := h.watch(c)
	next(healthIs(map[string]string{"rxe0": "Healthy", "rxe9": "Healthy"}))

	run(t, "ip", "link", "set", "vrc0", "down")
	next(healthIs(map[string]string{"rxe0": "Healthy", "rxe9": "Unhealthy"}))
	run(t, "ip", "link", "set", "vrc0", "up")
	next(healthIs(map[string]string{"rxe0": "Healthy", "rxe9": "Healthy"}))

	resp, err := c.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"rxe0"}}}})
	if err != nil {
		t.Fatal(err)
	}
	car := resp.ContainerResponses[0]
	h.plugin.mu.Lock()
	var uverbs string
	for _, d := range h.plugin.devs {
		if d.Name == "rxe0" {
			uverbs = d.UVerbs
		}
	}
	h.plugin.mu.Unlock()
	if got, want := specPaths(car), []string{uverbs, "/dev/infiniband/rdma_cm"}; uverbs == "" || !reflect.DeepEqual(got, want) {
		t.Errorf("devices %v, want %v", got, want)
	}
	if e := car.Envs; e[EnvDevice] != "rxe0" || e[EnvGIDIndex] != "1" || e[EnvGID] != vmtest.IP0 || e[EnvNetdev] != vmtest.Netdev0 || e[EnvRoCEVersion] != "2" {
		t.Errorf("env %v", e)
	}
}
