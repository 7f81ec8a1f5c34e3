//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The claimed capture of step 10: the sample with its own ring key, its receiver's device
// through the DRA driver (rxe1, by netdev), streamed into from a sender that takes rxe0 from
// the device plugin (plugin.mode both gives each side one device: bothValues).
const (
	claimedCapture = "claimed"
	claimedKey     = "d2a0"
	senderNetdev   = "veth0" // rxe0's netdev in the guest (guest-boot.sh)
)

// netdevSelector is the CEL selector of the driver's device bound to netdev.
func netdevSelector(netdev string) string {
	return fmt.Sprintf(`device.attributes["ringcap.io"].netdev == %q`, netdev)
}

// stepDRACapture is step 10: a RingCapture whose receiver takes its device through a claim
// (receiver.deviceClassName and selector, no ringcap.io/rdma) gets rxe1 from the driver, the
// operator's ResourceClaimTemplate and the claim in its status; a sender with the device
// plugin's one ringcap.io/rdma (rxe0) streams a seeded pattern into it over RoCE; the capture
// ends Succeeded and its reader verified every byte the sender sent.
func stepDRACapture(t *testing.T) {
	ctx := context.Background()
	waitForSliceNetdev(t, draClaimNetdev)
	waitAllocatable(t)
	rc := loadSample(t)
	rc.SetName(claimedCapture)
	_ = unstructured.SetNestedField(rc.Object, claimedKey, "spec", "ring", "key")
	_ = unstructured.SetNestedSlice(rc.Object, []any{map[string]any{"name": "verify",
		"args": []any{"ring", "read", "-k", claimedKey, "--wait", "60s", "--verify", "1", "-s"}}}, "spec", "readers")
	_ = unstructured.SetNestedField(rc.Object, draDeviceClass, "spec", "receiver", "deviceClassName")
	_ = unstructured.SetNestedField(rc.Object, netdevSelector(draClaimNetdev), "spec", "receiver", "selector")
	rcs := s.dyn.Resource(gvrRingCapture).Namespace(testNamespace)
	if _, err := rcs.Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create RingCapture %s with receiver.deviceClassName: %v", claimedCapture, err)
	}
	t.Cleanup(func() { deleteClaimedCapture(t) })
	u := waitCapture(t, claimedCapture, 4*time.Minute, "ready for senders with its claim", func(u *unstructured.Unstructured) bool {
		rr, _, _ := condition(u, "RingReady")
		rd, _, _ := condition(u, "ReceiverReady")
		return rr == "True" && rd == "True" && str(u, "status", "endpoint", "address") != "" && str(u, "status", "running", "deviceClaim") != ""
	})
	checkClaimedPod(t, u)

	addr := str(u, "status", "endpoint", "address") + ":" + str(u, "status", "endpoint", "port")
	slog := runClaimedSender(t, addr)
	end := waitCapture(t, claimedCapture, 3*time.Minute, "Succeeded", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Succeeded"
	})
	checkVerifiedRun(t, end, slog)
}

// checkClaimedPod checks what the operator made of the capture: status.running names the
// template <capture>-rdma and the pod's ResourceClaim; the pod claims its device and asks for
// no ringcap.io/rdma; the claim is allocated rxe1's device by the driver on the node; the
// receiver's RINGCAP_* environment (from the claim's CDI spec) names rxe1 and the GID index
// of status.endpoint.
func checkClaimedPod(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	tpl, claimName := str(u, "status", "running", "deviceClaimTemplate"), str(u, "status", "running", "deviceClaim")
	if tpl != claimedCapture+"-rdma" {
		t.Errorf("status.running.deviceClaimTemplate %q, want %s-rdma", tpl, claimedCapture)
	}
	if dev := str(u, "status", "endpoint", "device"); dev != draClaimDevice {
		t.Errorf("status.endpoint.device %q, want %s (the claim selects netdev %s)", dev, draClaimDevice, draClaimNetdev)
	}
	pod, err := s.cs.CoreV1().Pods(testNamespace).Get(ctx, str(u, "status", "pod"), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("capture pod: %v", err)
	}
	if len(pod.Spec.ResourceClaims) != 1 || pod.Spec.ResourceClaims[0].ResourceClaimTemplateName == nil ||
		*pod.Spec.ResourceClaims[0].ResourceClaimTemplateName != tpl {
		t.Errorf("capture pod's resourceClaims %+v, want one from template %s", pod.Spec.ResourceClaims, tpl)
	}
	for _, c := range pod.Spec.Containers {
		if _, ok := c.Resources.Limits[rdmaResource]; ok {
			t.Errorf("container %s of the claimed capture's pod requests %s", c.Name, rdmaResource)
		}
	}
	claim, err := s.cs.ResourceV1().ResourceClaims(testNamespace).Get(ctx, claimName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the capture's ResourceClaim %s: %v", claimName, err)
	}
	if a := claim.Status.Allocation; a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Driver != draDriver ||
		a.Devices.Results[0].Pool != s.node {
		t.Errorf("claim %s allocation %+v, want one device of %s in pool %s", claimName, claim.Status.Allocation, draDriver, s.node)
	}
	out, err := execIn(t, testNamespace, pod.Name, "receiver", "/bin/sh", "-c", "env | grep ^RINGCAP_ | sort")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("claimed receiver environment:\n%s", out)
	env := podEnv(out)
	if env["RINGCAP_RDMA_DEVICE"] != draClaimDevice || env["RINGCAP_NETDEV"] != draClaimNetdev ||
		env["RINGCAP_GID_INDEX"] != str(u, "status", "endpoint", "gidIndex") {
		t.Errorf("receiver env %v, want device %s netdev %s gid index %s (status.endpoint)", env, draClaimDevice, draClaimNetdev,
			str(u, "status", "endpoint", "gidIndex"))
	}
}

// runClaimedSender runs a sender pod whose device is rxe0, the device plugin's one unit of
// ringcap.io/rdma, streaming 64 MiB of the seeded pattern to addr; it returns the sender's
// log once it succeeded.
func runClaimedSender(t *testing.T, addr string) string {
	t.Helper()
	pod := shellPod("claimed-sender", `env | grep ^RINGCAP_RDMA_DEVICE=;
exec ringcap send --connect `+addr+` --qps 4 --mode send --msg-bytes 65536 --bytes 64M --seed 1 --header SOURCE=J0437-4715`)
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{rdmaResource: resource.MustParse("1")}
	restricted(&pod.Spec.Containers[0])
	phase, logs := runPod(t, pod, 4*time.Minute)
	t.Logf("claimed sender (%s):\n%s", phase, strings.TrimSpace(logs))
	if phase != corev1.PodSucceeded {
		t.Fatalf("sender pod %s", phase)
	}
	if !strings.Contains(logs, "RINGCAP_RDMA_DEVICE=rxe0\n") {
		t.Errorf("the device plugin's pool (netdev %s) did not give the sender rxe0", senderNetdev)
	}
	return logs
}

// netdevClaim is a ResourceClaim for one device of the driver's class bound to netdev.
func netdevClaim(name, netdev string) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: "rdma",
			Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: draDeviceClass,
				Selectors:       []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: netdevSelector(netdev)}}},
			},
		}}}},
	}
}

// claimPod is an unprivileged shell pod whose only container uses the ResourceClaim claim,
// placed by the scheduler (which allocates the claim) on the RDMA node.
func claimPod(name, claim, script string) *corev1.Pod {
	pod := shellPod(name, script)
	pod.Spec.NodeName = ""
	pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": s.node}
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "rdma", ResourceClaimName: &claim}}
	pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "rdma"}}
	restricted(&pod.Spec.Containers[0])
	return pod
}

// deleteClaimedCapture deletes the capture and waits until its pod and the operator's
// ResourceClaimTemplate (owned by the capture) are gone.
func deleteClaimedCapture(t *testing.T) {
	t.Helper()
	err := s.dyn.Resource(gvrRingCapture).Namespace(testNamespace).Delete(context.Background(), claimedCapture, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete RingCapture %s: %v", claimedCapture, err)
		return
	}
	waitFor(t, 3*time.Minute, "RingCapture "+claimedCapture+", its pod and its ResourceClaimTemplate gone", func(ctx context.Context) (bool, string, error) {
		pods := capturePods(t, claimedCapture)
		_, terr := s.cs.ResourceV1().ResourceClaimTemplates(testNamespace).Get(ctx, claimedCapture+"-rdma", metav1.GetOptions{})
		_, cerr := getCapture(ctx, claimedCapture)
		return len(pods) == 0 && apierrors.IsNotFound(terr) && apierrors.IsNotFound(cerr),
			fmt.Sprintf("pods %v, template: %v, capture: %v", podNames(pods), terr, cerr), nil
	})
}
