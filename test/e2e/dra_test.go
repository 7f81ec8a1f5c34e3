//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The DRA driver's contract (docs/dra.md).
const (
	draDriver      = "rdma.ringcap.io"
	draDeviceClass = "ringcap-rdma" // <release>-rdma
	draClaimDevice = "rxe1"
	draClaimNetdev = "veth1" // rxe1's netdev in the guest (guest-boot.sh)
)

// draDeviceData is the driver's status.devices[].data (internal/dra.DeviceData), decoded here
// from JSON so the suite checks the wire format, not the driver's own type.
type draDeviceData struct {
	IBDev    string `json:"ibdev"`
	Port     int    `json:"port"`
	GIDIndex *int   `json:"gidIndex"`
	GID      string `json:"gid"`
	Netdev   string `json:"netdev"`
}

// stepDRAClaim is the DRA step: the chart in plugin.mode both; the driver publishes a
// ResourceSlice on the node; a ResourceClaim selecting rxe1 by its ringcap.io/netdev attribute
// gets exactly that device through CDI (the pod sees one uverbs device, libibverbs lists only
// rxe1, the RINGCAP_* environment names it) and the claim's status carries the GID the kernel
// reports at that index; deleting the pod removes the claim's CDI spec from the node.
func stepDRAClaim(t *testing.T) {
	installBoth(t)
	waitForSliceNetdev(t, draClaimNetdev)

	ensureNamespace(t, testNamespace)
	claim := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "rdma-veth1", Namespace: testNamespace},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: "rdma",
			Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: draDeviceClass,
				Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
					Expression: fmt.Sprintf(`device.attributes["ringcap.io"].netdev == %q`, draClaimNetdev)}}},
			},
		}}}},
	}
	claims := s.cs.ResourceV1().ResourceClaims(testNamespace)
	if _, err := claims.Create(context.Background(), claim, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ResourceClaim %s: %v", claim.Name, err)
	}
	t.Cleanup(func() { deleteClaim(t, claim.Name) }) // after the pod's own cleanup (LIFO)

	inv := rdmaInventory(t)
	// The pod stays up after its report: a claim no pod uses any more is deallocated by the
	// resourceclaim controller, and its status.devices go with the allocation.
	pod := shellPod("rdma-claim", `env | grep ^RINGCAP_ | sort; echo "DEV $(ls /dev/infiniband | tr '\n' ' ')";
for d in /sys/class/infiniband_verbs/uverbs*; do echo "MAP $(basename $d) $(cat $d/ibdev)"; done; echo "ID $(id -u)";
echo "SYSGID $(cat /sys/class/infiniband/$RINGCAP_RDMA_DEVICE/ports/$RINGCAP_RDMA_PORT/gids/$RINGCAP_GID_INDEX)"; ibv_devinfo -l; echo "END OF REPORT"; sleep 600`)
	// Through the scheduler, not spec.nodeName: only the scheduler allocates the claim and
	// reserves it for the pod, and the kubelet refuses a claim not reserved for the pod.
	pod.Spec.NodeName = ""
	pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": s.node}
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "rdma", ResourceClaimName: &claim.Name}}
	pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "rdma"}}
	restricted(&pod.Spec.Containers[0])
	logs := runUntilReported(t, pod, 3*time.Minute)
	t.Logf("rdma-claim pod output:\n%s", logs)
	checkUnit(t, logs, inv)
	env := podEnv(logs)
	if env["RINGCAP_RDMA_DEVICE"] != draClaimDevice || env["RINGCAP_NETDEV"] != draClaimNetdev {
		t.Errorf("the claim selecting netdev %s got device %q netdev %q, want %s", draClaimNetdev,
			env["RINGCAP_RDMA_DEVICE"], env["RINGCAP_NETDEV"], draClaimDevice)
	}
	uid := checkClaimStatus(t, claim.Name, env, sysGID(logs))

	// Deleting the pod unprepares the claim: its CDI spec leaves the node.
	deletePodAndWait(t, testNamespace, pod.Name)
	spec := "/var/run/cdi/ringcap.io-claim_" + uid + ".json"
	waitFor(t, 2*time.Minute, "CDI spec "+spec+" removed", func(context.Context) (bool, string, error) {
		out, rc, err := guestRun("cdi-ls", "ls /var/run/cdi; test ! -e "+spec, 30*time.Second)
		if err != nil {
			return false, "", err
		}
		return rc == 0, "/var/run/cdi: " + strings.Join(strings.Fields(out), " "), nil
	})
}

// bothValues is plugin.mode both with the node's two devices split: the device plugin's pool
// ringcap.io/rdma takes rxe0 (netdev veth0), the DRA driver's pool rxe1 (veth1). The chart
// refuses plugin.mode both with pools that select the same devices.
const bothValues = `plugin:
  mode: both
  config:
    version: v1
    rescanInterval: 1s
    pools: [{name: rdma, selector: {netdevs: [` + senderNetdev + `]}, sharing: {mode: exclusive}, gidPolicy: {mode: roce-v2-ipv4}}]
  dra:
    config:
      version: v1
      rescanInterval: 1s
      pools: [{name: rdma, selector: {netdevs: [` + draClaimNetdev + `]}, gidPolicy: {mode: roce-v2-ipv4}}]
`

// installBoth installs the chart from the working tree with plugin.mode both (bothValues).
func installBoth(t *testing.T) {
	t.Helper()
	values := filepath.Join(t.TempDir(), "both.yaml")
	if err := os.WriteFile(values, []byte(bothValues), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := s.helmCmd("upgrade", "--install", "ringcap", s.chart, "--namespace", s.namespace, "--create-namespace",
		"--set", "image.tag="+s.tag, "--set", "image.pullPolicy="+string(s.pull), "-f", values,
		"--wait", "--timeout", "5m")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("helm (plugin.mode both): %s", firstLine(out))
}

// waitForSliceNetdev waits until the driver's ResourceSlice for the node has a device whose
// ringcap.io/netdev attribute is netdev.
func waitForSliceNetdev(t *testing.T, netdev string) {
	t.Helper()
	waitFor(t, 3*time.Minute, "ResourceSlice of "+draDriver+" on "+s.node+" with netdev "+netdev, func(ctx context.Context) (bool, string, error) {
		l, err := s.cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil {
			return retry(err)
		}
		var seen []string
		for _, sl := range l.Items {
			if sl.Spec.Driver != draDriver || sl.Spec.NodeName == nil || *sl.Spec.NodeName != s.node {
				continue
			}
			for _, d := range sl.Spec.Devices {
				nd := d.Attributes["ringcap.io/netdev"].StringValue
				if nd == nil {
					continue
				}
				seen = append(seen, d.Name+"="+*nd)
				if *nd == netdev {
					return true, fmt.Sprintf("devices %v", seen), nil
				}
			}
		}
		return false, fmt.Sprintf("devices (name=netdev) %v", seen), nil
	})
}

// checkClaimStatus checks the claim's status.devices entry of the driver: device rxe1, and the
// GID of the pod's environment, which is the GID sysfs shows at that index. It returns the
// claim's UID.
func checkClaimStatus(t *testing.T, name string, env map[string]string, sysfsGID string) string {
	t.Helper()
	var c *resourcev1.ResourceClaim
	waitFor(t, time.Minute, "claim "+name+" has status.devices", func(ctx context.Context) (bool, string, error) {
		var err error
		if c, err = s.cs.ResourceV1().ResourceClaims(testNamespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return retry(err)
		}
		return len(c.Status.Devices) > 0, fmt.Sprintf("allocated %t reservedFor %v devices %v",
			c.Status.Allocation != nil, c.Status.ReservedFor, c.Status.Devices), nil
	})
	var data *draDeviceData
	for _, d := range c.Status.Devices {
		if d.Driver != draDriver || d.Data == nil {
			continue
		}
		data = &draDeviceData{}
		if err := json.Unmarshal(d.Data.Raw, data); err != nil {
			t.Fatalf("claim %s status.devices[%s].data %s: %v", name, d.Device, d.Data.Raw, err)
		}
		t.Logf("claim %s status device %s data %s", name, d.Device, d.Data.Raw)
	}
	if data == nil {
		t.Fatalf("claim %s has no status.devices entry of %s with data: %+v", name, draDriver, c.Status.Devices)
	}
	if data.IBDev != draClaimDevice || data.Netdev != draClaimNetdev || data.GIDIndex == nil ||
		fmt.Sprint(*data.GIDIndex) != env["RINGCAP_GID_INDEX"] {
		t.Errorf("claim status data %+v, want ibdev %s netdev %s gidIndex %s", *data, draClaimDevice, draClaimNetdev, env["RINGCAP_GID_INDEX"])
	}
	got, want := net.ParseIP(data.GID), net.ParseIP(sysfsGID)
	if got == nil || want == nil || !got.Equal(want) || data.GID != env["RINGCAP_GID"] {
		t.Errorf("claim status GID %q, sysfs GID at index %s %q, pod RINGCAP_GID %q: want all the same",
			data.GID, env["RINGCAP_GID_INDEX"], sysfsGID, env["RINGCAP_GID"])
	}
	return string(c.UID)
}

// podEnv is the RINGCAP_* environment a shell pod printed.
func podEnv(logs string) map[string]string {
	env := map[string]string{}
	for _, l := range strings.Split(logs, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && strings.HasPrefix(k, "RINGCAP_") {
			env[k] = v
		}
	}
	return env
}

// sysGID is the GID the pod read from sysfs (its SYSGID line).
func sysGID(logs string) string {
	for _, l := range strings.Split(logs, "\n") {
		if g, ok := strings.CutPrefix(l, "SYSGID "); ok {
			return strings.TrimSpace(g)
		}
	}
	return ""
}

func deleteClaim(t *testing.T, name string) {
	t.Helper()
	err := s.cs.ResourceV1().ResourceClaims(testNamespace).Delete(context.Background(), name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete ResourceClaim %s: %v", name, err)
	}
}

// runUntilReported creates pod and waits until it is running and its log has the line "END OF
// REPORT" (several words: checkUnit takes one-word lines after ibv_devinfo for device names);
// it returns the log. The pod is deleted at the end of the test.
func runUntilReported(t *testing.T, pod *corev1.Pod, limit time.Duration) string {
	t.Helper()
	pods := s.cs.CoreV1().Pods(pod.Namespace)
	if _, err := pods.Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", pod.Name, err)
	}
	t.Cleanup(func() { deletePodAndWait(t, pod.Namespace, pod.Name) })
	var logs string
	waitFor(t, limit, "pod "+pod.Name+" reported", func(ctx context.Context) (bool, string, error) {
		p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return retry(err)
		}
		if p.Status.Phase != corev1.PodRunning {
			if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
				return false, "", fmt.Errorf("pod ended: %s", podSummary(p))
			}
			return false, podSummary(p), nil
		}
		b, err := pods.GetLogs(pod.Name, &corev1.PodLogOptions{Container: pod.Spec.Containers[0].Name}).DoRaw(ctx)
		if err != nil {
			return retry(err)
		}
		logs = string(b)
		return strings.Contains(logs, "END OF REPORT"), podSummary(p), nil
	})
	return logs
}
