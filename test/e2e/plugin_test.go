//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// stepInstall is step 1: helm install; the plugin registers with the real kubelet, the node
// shows ringcap.io/rdma capacity and labels, the RDMANode inventory lists the RDMA devices with
// their GID indices, and an unprivileged pod that requests one unit gets exactly one device.
func stepInstall(t *testing.T) {
	installDevicePlugin(t)

	// The kubelet takes the capacity from the plugin's registration, the labels come from the
	// plugin's own node update: either may come first.
	waitFor(t, 3*time.Minute, "node "+s.node+" advertises "+string(rdmaResource)+" and is labelled ringcap.io/rdma=true ringcap.io/roce-v2=true",
		func(ctx context.Context) (bool, string, error) {
			n, err := s.cs.CoreV1().Nodes().Get(ctx, s.node, metav1.GetOptions{})
			if err != nil {
				return retry(err)
			}
			c, a := n.Status.Capacity[rdmaResource], n.Status.Allocatable[rdmaResource]
			rdma, roce := n.Labels["ringcap.io/rdma"], n.Labels["ringcap.io/roce-v2"]
			return c.Value() >= int64(len(s.devices)) && a.Value() >= int64(len(s.devices)) && rdma == "true" && roce == "true",
				fmt.Sprintf("capacity %s allocatable %s labels rdma=%q roce-v2=%q", c.String(), a.String(), rdma, roce), nil
		})

	inv := rdmaInventory(t)
	for _, want := range s.devices {
		gids, ok := inv[want]
		if !ok {
			t.Errorf("RDMANode %s does not list %s; it lists %v", s.node, want, keys(inv))
			continue
		}
		if len(gids) == 0 {
			t.Errorf("RDMANode %s: device %s has no GIDs", s.node, want)
		}
		t.Logf("RDMANode %s: %s GIDs %v", s.node, want, gids)
	}

	// One unit for an unprivileged pod: the RINGCAP_* environment, exactly its uverbs node plus
	// rdma_cm in /dev/infiniband, and libibverbs sees exactly that device.
	ensureNamespace(t, testNamespace)
	pod := shellPod("rdma-unit", `env | grep ^RINGCAP_ | sort; echo "DEV $(ls /dev/infiniband | tr '\n' ' ')";
for d in /sys/class/infiniband_verbs/uverbs*; do echo "MAP $(basename $d) $(cat $d/ibdev)"; done; echo "ID $(id -u)"; ibv_devinfo -l`)
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{rdmaResource: resource.MustParse("1")}
	restricted(&pod.Spec.Containers[0])
	phase, logs := runPod(t, pod, 3*time.Minute)
	t.Logf("rdma-unit pod output:\n%s", logs)
	if phase != corev1.PodSucceeded {
		t.Fatalf("pod rdma-unit %s", phase)
	}
	checkUnit(t, logs, inv)
}

// installDevicePlugin installs the chart from the working tree with its default values
// (plugin.mode deviceplugin, one pool with every device) and RINGCAP_E2E_HELM_SET.
func installDevicePlugin(t *testing.T) {
	t.Helper()
	args := []string{"upgrade", "--install", "ringcap", s.chart, "--namespace", s.namespace, "--create-namespace",
		"--set", "image.tag=" + s.tag, "--set", "image.pullPolicy=" + string(s.pull), "--reset-values", "--wait", "--timeout", "5m"}
	for _, v := range s.helmSet {
		args = append(args, "--set", v)
	}
	out, err := s.helmCmd(args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("helm: %s", firstLine(out))
}

// checkUnit checks the output of the one-unit pod (see stepInstall).
func checkUnit(t *testing.T, logs string, inv map[string][]string) {
	t.Helper()
	env := map[string]string{}
	uverbsOf := map[string]string{}
	var devs []string
	for _, l := range strings.Split(logs, "\n") {
		switch f := strings.Fields(l); {
		case strings.HasPrefix(l, "RINGCAP_"):
			k, v, _ := strings.Cut(l, "=")
			env[k] = v
		case strings.HasPrefix(l, "DEV "):
			devs = f[1:]
		case strings.HasPrefix(l, "MAP ") && len(f) == 3:
			uverbsOf[f[2]] = f[1]
		case strings.HasPrefix(l, "ID ") && len(f) == 2 && f[1] == "0":
			t.Errorf("the pod ran as root")
		}
	}
	dev := env["RINGCAP_RDMA_DEVICE"]
	if !slices.Contains(s.devices, dev) {
		t.Fatalf("RINGCAP_RDMA_DEVICE=%q, want one of %v (env %v)", dev, s.devices, env)
	}
	for _, k := range []string{"RINGCAP_RDMA_PORT", "RINGCAP_GID_INDEX", "RINGCAP_GID", "RINGCAP_NETDEV", "RINGCAP_ROCE_VERSION"} {
		if env[k] == "" {
			t.Errorf("%s missing from the pod's environment %v", k, env)
		}
	}
	if gids := inv[dev]; !slices.Contains(gids, env["RINGCAP_GID_INDEX"]) {
		t.Errorf("RINGCAP_GID_INDEX=%s is not a GID index of %s in the inventory (%v)", env["RINGCAP_GID_INDEX"], dev, gids)
	}
	want := []string{"rdma_cm", uverbsOf[dev]}
	sort.Strings(want)
	sort.Strings(devs)
	if uverbsOf[dev] == "" || !slices.Equal(devs, want) {
		t.Errorf("/dev/infiniband in the pod = %v, want exactly %v (uverbs map %v)", devs, want, uverbsOf)
	}
	hca := regexp.MustCompile(`(?m)^\s*(\S+)\s*$`)
	var listed []string
	after := logs[strings.Index(logs, "HCA"):]
	for _, m := range hca.FindAllStringSubmatch(after[strings.Index(after, "\n")+1:], -1) {
		listed = append(listed, m[1])
	}
	if !strings.Contains(logs, "1 HCA found") || !slices.Equal(listed, []string{dev}) {
		t.Errorf("ibv_devinfo -l in the pod lists %v, want exactly [%s]", listed, dev)
	}
}

// rdmaInventory reads the node's RDMANode and returns device name -> GID indices (as strings).
func rdmaInventory(t *testing.T) map[string][]string {
	t.Helper()
	var obj *unstructured.Unstructured
	waitFor(t, time.Minute, "RDMANode "+s.node+" lists the RDMA devices", func(ctx context.Context) (bool, string, error) {
		var err error
		obj, err = s.dyn.Resource(gvrRDMANode).Get(ctx, s.node, metav1.GetOptions{})
		if err != nil {
			return retry(err)
		}
		inv := inventoryOf(obj)
		for _, d := range s.devices {
			if len(inv[d]) == 0 {
				return false, fmt.Sprintf("devices %v", inv), nil
			}
		}
		return true, fmt.Sprintf("devices %v", keys(inv)), nil
	})
	return inventoryOf(obj)
}

func inventoryOf(obj *unstructured.Unstructured) map[string][]string {
	inv := map[string][]string{}
	devs, _, _ := unstructured.NestedSlice(obj.Object, "status", "devices")
	for _, d := range devs {
		dm, _ := d.(map[string]any)
		name, _ := dm["name"].(string)
		inv[name] = nil
		ports, _ := dm["ports"].([]any)
		for _, p := range ports {
			pm, _ := p.(map[string]any)
			gids, _ := pm["gids"].([]any)
			for _, g := range gids {
				gm, _ := g.(map[string]any)
				inv[name] = append(inv[name], fmt.Sprint(gm["index"]))
			}
		}
	}
	return inv
}

func keys[V any](m map[string]V) []string {
	var k []string
	for key := range m {
		k = append(k, key)
	}
	sort.Strings(k)
	return k
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}
