//go:build e2e

package e2e

import (
	"context"
	"fmt"
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

// stepBothDisjoint is step 9a: with plugin.mode both (bothValues) a device is offered one way
// only. The devices of the driver's ResourceSlice on the node (rxe1) and those behind the
// device plugin's ringcap.io/* resources (the RDMANode's pools: rxe0) are disjoint, and the
// node has one unit of ringcap.io/rdma. While a claim holds the driver's device, a pod asking
// ringcap.io/rdma gets rxe0, a second such pod finds no unit (it is not given rxe1), and a
// claim for rxe0's netdev cannot be allocated.
func stepBothDisjoint(t *testing.T) {
	waitFor(t, 2*time.Minute, "the slice offers "+draClaimDevice+", the device plugin's pools "+senderDevice+" and one unit",
		func(ctx context.Context) (bool, string, error) {
			sliced, pooled, units, err := offeredDevices(ctx)
			if err != nil {
				return retry(err)
			}
			return slices.Equal(sliced, []string{draClaimDevice}) && slices.Equal(pooled, []string{senderDevice}) && units == 1,
				fmt.Sprintf("slice %v, device plugin pools %v, allocatable %s %d", sliced, pooled, rdmaResource, units), nil
		})

	claim := netdevClaim("hold-"+draClaimNetdev, draClaimNetdev)
	if _, err := s.cs.ResourceV1().ResourceClaims(testNamespace).Create(context.Background(), claim, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ResourceClaim %s: %v", claim.Name, err)
	}
	t.Cleanup(func() { deleteClaim(t, claim.Name) })
	holder := runUntilReported(t, claimPod("claim-holder", claim.Name, `env | grep ^RINGCAP_RDMA_DEVICE=; echo "END OF REPORT"; sleep 600`), 3*time.Minute)
	if !strings.Contains(holder, "RINGCAP_RDMA_DEVICE="+draClaimDevice+"\n") {
		t.Fatalf("the claim on %s did not get %s:\n%s", draClaimNetdev, draClaimDevice, holder)
	}

	unit := scheduledPod("unit-beside-claim", `env | grep ^RINGCAP_RDMA_DEVICE=; ibv_devinfo -l; echo "END OF REPORT"; sleep 600`)
	unit.Spec.Containers[0].Resources.Limits = corev1.ResourceList{rdmaResource: resource.MustParse("1")}
	logs := runUntilReported(t, unit, 3*time.Minute)
	t.Logf("%s pod beside the claim:\n%s", rdmaResource, logs)
	if !strings.Contains(logs, "RINGCAP_RDMA_DEVICE="+senderDevice+"\n") || strings.Contains(logs, draClaimDevice) {
		t.Errorf("the %s pod beside the claim on %s did not get %s alone", rdmaResource, draClaimDevice, senderDevice)
	}

	second := scheduledPod("unit-none-left", "sleep 600")
	second.Spec.Containers[0].Resources.Limits = corev1.ResourceList{rdmaResource: resource.MustParse("1")}
	createPod(t, second)
	waitPodUnschedulable(t, second.Name, "Insufficient "+string(rdmaResource))

	other := netdevClaim("want-"+senderNetdev, senderNetdev)
	if _, err := s.cs.ResourceV1().ResourceClaims(testNamespace).Create(context.Background(), other, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ResourceClaim %s: %v", other.Name, err)
	}
	t.Cleanup(func() { deleteClaim(t, other.Name) })
	wants := claimPod("claim-plugin-device", other.Name, "sleep 600")
	createPod(t, wants)
	waitUnschedulable(t, wants.Name, other.Name)
}

// senderDevice is the device plugin's device under bothValues (netdev senderNetdev).
const senderDevice = "rxe0"

// offeredDevices returns the RDMA devices (ibdev) of the driver's slices on the node, the
// devices of the device plugin's pools in the node's RDMANode, both sorted, and the node's
// allocatable ringcap.io/rdma.
func offeredDevices(ctx context.Context) (sliced, pooled []string, units int64, err error) {
	l, err := s.cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, 0, err
	}
	for _, sl := range l.Items {
		if sl.Spec.Driver != draDriver || sl.Spec.NodeName == nil || *sl.Spec.NodeName != s.node {
			continue
		}
		for _, d := range sl.Spec.Devices {
			if ib := d.Attributes["ringcap.io/ibdev"].StringValue; ib != nil && !slices.Contains(sliced, *ib) {
				sliced = append(sliced, *ib)
			}
		}
	}
	obj, err := s.dyn.Resource(gvrRDMANode).Get(ctx, s.node, metav1.GetOptions{})
	if err != nil {
		return nil, nil, 0, err
	}
	pools, _, _ := unstructured.NestedSlice(obj.Object, "status", "pools")
	for _, p := range pools {
		devs, _, _ := unstructured.NestedStringSlice(p.(map[string]any), "devices")
		pooled = append(pooled, devs...)
	}
	n, err := s.cs.CoreV1().Nodes().Get(ctx, s.node, metav1.GetOptions{})
	if err != nil {
		return nil, nil, 0, err
	}
	a := n.Status.Allocatable[rdmaResource]
	sort.Strings(sliced)
	sort.Strings(pooled)
	return sliced, pooled, a.Value(), nil
}

// scheduledPod is an unprivileged shell pod placed on the node by the scheduler (which
// counts extended resources and allocates claims), not by spec.nodeName.
func scheduledPod(name, script string) *corev1.Pod {
	pod := shellPod(name, script)
	pod.Spec.NodeName = ""
	pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": s.node}
	restricted(&pod.Spec.Containers[0])
	return pod
}

// createPod creates pod and deletes it at the end of the test.
func createPod(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if _, err := s.cs.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", pod.Name, err)
	}
	t.Cleanup(func() { deletePodAndWait(t, pod.Namespace, pod.Name) })
}

// waitPodUnschedulable waits until the scheduler reports the pod unschedulable with a
// message containing why.
func waitPodUnschedulable(t *testing.T, pod, why string) {
	t.Helper()
	waitFor(t, 2*time.Minute, "pod "+pod+" unschedulable: "+why, func(ctx context.Context) (bool, string, error) {
		p, err := s.cs.CoreV1().Pods(testNamespace).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return retry(err)
		}
		if p.Spec.NodeName != "" {
			return false, "", fmt.Errorf("scheduled to %s: %s", p.Spec.NodeName, podSummary(p))
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return strings.Contains(c.Message, why), c.Message, nil
			}
		}
		return false, podSummary(p), nil
	})
}

// stepDevicePluginRestored is step 11b: after the DRA steps the chart goes back to step 1's
// plugin.mode deviceplugin, whose one pool has every device: the later steps take two units.
func stepDevicePluginRestored(t *testing.T) {
	installDevicePlugin(t)
	waitFor(t, 3*time.Minute, "node "+s.node+" advertises "+string(rdmaResource)+" for every device", func(ctx context.Context) (bool, string, error) {
		n, err := s.cs.CoreV1().Nodes().Get(ctx, s.node, metav1.GetOptions{})
		if err != nil {
			return retry(err)
		}
		a := n.Status.Allocatable[rdmaResource]
		return a.Value() >= int64(len(s.devices)), a.String(), nil
	})
}
