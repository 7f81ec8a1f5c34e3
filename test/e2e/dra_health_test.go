//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Taking veth1 down and up in the guest. Bringing a link down drops the routes through it,
// so the restore puts back guest-boot.sh's policy routes between the two veths (both; replace
// is idempotent) and shows the ports' states and those routes.
const (
	linkDownScript    = "ip link set " + draClaimNetdev + " down && cat /sys/class/infiniband/" + draClaimDevice + "/ports/1/state"
	linkRestoreScript = `set -e
ip link set veth1 up
ip route replace 198.18.0.1 dev veth1 src 198.18.0.2 table 101
ip route replace 198.18.0.2 dev veth0 src 198.18.0.1 table 100
for d in rxe0 rxe1; do echo "$d $(cat /sys/class/infiniband/$d/ports/1/state)"; done
echo "table100 $(ip route show table 100 | tr '\n' ' ')"; echo "table101 $(ip route show table 101 | tr '\n' ' ')"`
)

// stepDRAPortDown is step 11, health on the cluster: taking rxe1's netdev down in the guest
// removes rxe1's device from the node's ResourceSlice, and a pod whose new claim selects it
// stays unschedulable with its claim unallocated; bringing the link up puts the device back
// (same GID) and that pod then gets rxe1. The link is restored on failure too.
func stepDRAPortDown(t *testing.T) {
	waitForSliceNetdev(t, draClaimNetdev)
	before := sliceDevice(t, draClaimNetdev)
	t.Logf("before: %s", before)
	t.Cleanup(func() { restoreLink(t) })
	out, rc, err := guestRun("link-down", linkDownScript, time.Minute)
	if err != nil || rc != 0 {
		t.Fatalf("take %s down in the guest: rc %d %v: %s", draClaimNetdev, rc, err, out)
	}
	down := time.Now()
	t.Logf("%s down; %s port 1: %s", draClaimNetdev, draClaimDevice, strings.TrimSpace(out))
	waitFor(t, 2*time.Minute, "no device with netdev "+draClaimNetdev+" in the ResourceSlice", func(ctx context.Context) (bool, string, error) {
		devs, err := nodeSliceDevices(ctx)
		if err != nil {
			return retry(err)
		}
		_, ok := devs[draClaimNetdev]
		return !ok, fmt.Sprintf("devices by netdev %v (%v after the link went down)", devs, time.Since(down).Round(time.Millisecond)), nil
	})

	claim := netdevClaim("while-down-"+draClaimNetdev, draClaimNetdev)
	claims := s.cs.ResourceV1().ResourceClaims(testNamespace)
	if _, err := claims.Create(context.Background(), claim, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ResourceClaim %s: %v", claim.Name, err)
	}
	t.Cleanup(func() { deleteClaim(t, claim.Name) })
	pod := claimPod("claim-while-down", claim.Name, `env | grep ^RINGCAP_ | sort; echo "END OF REPORT"; sleep 600`)
	if _, err := s.cs.CoreV1().Pods(testNamespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", pod.Name, err)
	}
	t.Cleanup(func() { deletePodAndWait(t, testNamespace, pod.Name) })
	waitUnschedulable(t, pod.Name, claim.Name)

	restoreLink(t)
	waitForSliceNetdev(t, draClaimNetdev)
	after := sliceDevice(t, draClaimNetdev)
	t.Logf("after: %s", after)
	if after.name != before.name || after.gid != before.gid {
		t.Errorf("device back as %s, was %s", after, before)
	}
	logs := waitReported(t, pod.Name, 6*time.Minute) // the scheduler retries on the slice change; at the latest after 5 min
	if env := podEnv(logs); env["RINGCAP_RDMA_DEVICE"] != draClaimDevice || env["RINGCAP_NETDEV"] != draClaimNetdev {
		t.Errorf("the claim made while %s was down got %v, want device %s once it is up", draClaimNetdev, env, draClaimDevice)
	}
}

// restoreLink brings veth1 up again with its routes; it may run twice (step and cleanup).
func restoreLink(t *testing.T) {
	t.Helper()
	out, rc, err := guestRun("link-restore", linkRestoreScript, time.Minute)
	if err != nil || rc != 0 {
		t.Errorf("restore %s in the guest: rc %d %v: %s", draClaimNetdev, rc, err, out)
		return
	}
	t.Logf("link restored: %s", strings.Join(strings.Fields(out), " "))
}

// waitUnschedulable waits until the scheduler has found no node for the pod (its claim
// cannot be allocated), and checks that the claim has no allocation.
func waitUnschedulable(t *testing.T, pod, claim string) {
	t.Helper()
	waitFor(t, 2*time.Minute, "pod "+pod+" unschedulable", func(ctx context.Context) (bool, string, error) {
		p, err := s.cs.CoreV1().Pods(testNamespace).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return retry(err)
		}
		if p.Spec.NodeName != "" {
			return false, "", fmt.Errorf("scheduled to %s while its device is down: %s", p.Spec.NodeName, podSummary(p))
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return true, c.Message, nil
			}
		}
		return false, podSummary(p), nil
	})
	c, err := s.cs.ResourceV1().ResourceClaims(testNamespace).Get(context.Background(), claim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Status.Allocation != nil {
		t.Errorf("claim %s allocated while its device is down: %+v", claim, c.Status.Allocation)
	}
}

// waitReported waits until the existing pod runs and its log has "END OF REPORT".
func waitReported(t *testing.T, pod string, limit time.Duration) string {
	t.Helper()
	var logs string
	waitFor(t, limit, "pod "+pod+" reported", func(ctx context.Context) (bool, string, error) {
		p, err := s.cs.CoreV1().Pods(testNamespace).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return retry(err)
		}
		if p.Status.Phase != corev1.PodRunning {
			return false, podSummary(p), nil
		}
		b, err := s.cs.CoreV1().Pods(testNamespace).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			return retry(err)
		}
		logs = string(b)
		return strings.Contains(logs, "END OF REPORT"), podSummary(p), nil
	})
	return logs
}

// publishedDevice is a device of the driver's slice on the node.
type publishedDevice struct{ name, gid string }

func (d publishedDevice) String() string { return d.name + " gid " + d.gid }

// nodeSliceDevices lists the driver's devices on the node by their netdev attribute.
func nodeSliceDevices(ctx context.Context) (map[string]publishedDevice, error) {
	l, err := s.cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]publishedDevice{}
	for _, sl := range l.Items {
		if sl.Spec.Driver != draDriver || sl.Spec.NodeName == nil || *sl.Spec.NodeName != s.node {
			continue
		}
		for _, d := range sl.Spec.Devices {
			nd, gid := d.Attributes["ringcap.io/netdev"].StringValue, d.Attributes["ringcap.io/gid"].StringValue
			if nd == nil {
				continue
			}
			pd := publishedDevice{name: d.Name}
			if gid != nil {
				pd.gid = *gid
			}
			out[*nd] = pd
		}
	}
	return out, nil
}

func sliceDevice(t *testing.T, netdev string) publishedDevice {
	t.Helper()
	devs, err := nodeSliceDevices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d, ok := devs[netdev]
	if !ok {
		t.Fatalf("no device with netdev %s in the slice: %v", netdev, devs)
	}
	return d
}

// stepDRAPortHealth is step 11a, device health on the cluster (KEP-4680; the harness enables
// the ResourceHealthStatus feature gate on the API server and the kubelet): a running pod
// whose claim holds rxe1 shows its device Healthy in status.containerStatuses[].
// allocatedResourcesStatus; taking rxe1's netdev down turns it Unhealthy while the pod keeps
// running, and bringing the link up turns it Healthy again. The link is restored on failure too.
//
// The pod's claim entry has the ResourceClaim's own name: a 1.34 kubelet looks the claim up by
// the container's claim name and shows nothing for a claim named otherwise or made from a
// template (kubernetes/kubernetes#134482, fixed in 1.35 by #134875); docs/dra.md says so.
func stepDRAPortHealth(t *testing.T) {
	waitForSliceNetdev(t, draClaimNetdev)
	claim := netdevClaim("health-"+draClaimNetdev, draClaimNetdev)
	if _, err := s.cs.ResourceV1().ResourceClaims(testNamespace).Create(context.Background(), claim, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ResourceClaim %s: %v", claim.Name, err)
	}
	t.Cleanup(func() { deleteClaim(t, claim.Name) })
	pod := claimPod("holds-"+draClaimDevice, claim.Name, `env | grep ^RINGCAP_ | sort; echo "END OF REPORT"; sleep 600`)
	pod.Spec.ResourceClaims[0].Name = claim.Name
	pod.Spec.Containers[0].Resources.Claims[0].Name = claim.Name
	logs := runUntilReported(t, pod, 3*time.Minute)
	if env := podEnv(logs); env["RINGCAP_RDMA_DEVICE"] != draClaimDevice {
		t.Fatalf("the health pod got %v, want %s", env, draClaimDevice)
	}
	status := corev1.ResourceName("claim:" + claim.Name)
	waitDeviceHealth(t, pod.Name, status, corev1.ResourceHealthStatusHealthy)

	t.Cleanup(func() { restoreLink(t) })
	if out, rc, err := guestRun("link-down", linkDownScript, time.Minute); err != nil || rc != 0 {
		t.Fatalf("take %s down in the guest: rc %d %v: %s", draClaimNetdev, rc, err, out)
	}
	waitDeviceHealth(t, pod.Name, status, corev1.ResourceHealthStatusUnhealthy)
	restoreLink(t)
	waitForSliceNetdev(t, draClaimNetdev)
	waitDeviceHealth(t, pod.Name, status, corev1.ResourceHealthStatusHealthy)
}

// waitDeviceHealth waits until the running pod's container reports the claim's one device
// under name (claim:<claim>) with health want.
func waitDeviceHealth(t *testing.T, pod string, name corev1.ResourceName, want corev1.ResourceHealthStatus) {
	t.Helper()
	waitFor(t, 2*time.Minute, "pod "+pod+" device "+string(want), func(ctx context.Context) (bool, string, error) {
		p, err := s.cs.CoreV1().Pods(testNamespace).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return retry(err)
		}
		if p.Status.Phase != corev1.PodRunning {
			return false, "", fmt.Errorf("pod %s stopped: %s", pod, podSummary(p))
		}
		var seen []string
		for _, cs := range p.Status.ContainerStatuses {
			for _, rs := range cs.AllocatedResourcesStatus {
				for _, r := range rs.Resources {
					seen = append(seen, fmt.Sprintf("%s %s %s", rs.Name, r.ResourceID, r.Health))
				}
				if rs.Name == name && len(rs.Resources) == 1 && rs.Resources[0].Health == want {
					return true, strings.Join(seen, "; "), nil
				}
			}
		}
		return false, fmt.Sprintf("allocatedResourcesStatus %v", seen), nil
	})
}
