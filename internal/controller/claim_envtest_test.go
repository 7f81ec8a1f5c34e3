//go:build envtest

package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/internal/controller"
)

// A capture whose RDMA device comes through a DRA claim, against a real API server (with
// resource.k8s.io/v1) and the operator running with config/rbac's permissions: the
// ResourceClaimTemplate it creates, the pod's wiring, and the status while the claim
// waits, cannot be allocated, and once the pod runs with it.
func TestDeviceThroughClaim(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	ns := newNamespace(t, "claims")
	const selector = `device.attributes["ringcap.io"].netdev == "veth1"`
	rc := newCapture(t, ns, "by-class", func(rc *ringcapv1.RingCapture) {
		rc.Spec.Receiver.DeviceClassName = "ringcap-roce-v2"
		rc.Spec.Receiver.Selector = selector
	})
	pod := waitPod(t, ns, "by-class")

	tpl := &resourcev1.ResourceClaimTemplate{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "by-class-rdma"}, tpl); err != nil {
		t.Fatalf("the capture's ResourceClaimTemplate: %v", err)
	}
	if ref := metav1.GetControllerOf(tpl); ref == nil || ref.UID != rc.UID || ref.Kind != "RingCapture" {
		t.Errorf("template controller %+v, want RingCapture by-class (uid %s)", ref, rc.UID)
	}
	reqs := tpl.Spec.Spec.Devices.Requests
	if len(reqs) != 1 || reqs[0].Name != "rdma" || reqs[0].Exactly == nil || reqs[0].Exactly.DeviceClassName != "ringcap-roce-v2" ||
		reqs[0].Exactly.Count != 1 || len(reqs[0].Exactly.Selectors) != 1 || reqs[0].Exactly.Selectors[0].CEL.Expression != selector {
		t.Errorf("template requests %+v, want one rdma request of ringcap-roce-v2 with the selector", reqs)
	}
	if len(pod.Spec.ResourceClaims) != 1 || *pod.Spec.ResourceClaims[0].ResourceClaimTemplateName != "by-class-rdma" {
		t.Errorf("pod resourceClaims %+v, want rdma from by-class-rdma", pod.Spec.ResourceClaims)
	}
	recv := pod.Spec.Containers[0]
	if _, ok := recv.Resources.Limits[ringcapv1.DefaultResourceName]; ok || len(recv.Resources.Claims) != 1 || recv.Resources.Claims[0].Name != "rdma" {
		t.Errorf("receiver resources %+v, want the claim rdma and no %s", recv.Resources, ringcapv1.DefaultResourceName)
	}
	waitCapture(t, ns, "by-class", "ClaimPending", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionScheduled, metav1.ConditionFalse, ringcapv1.ReasonClaimPending) &&
			strings.Contains(condition(rc, ringcapv1.ConditionScheduled).Message, "by-class-rdma")
	})

	// The resource claim controller made the claim; the scheduler finds no device.
	claim := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "by-class-capture-rdma-x7k2p"},
		Spec:       *tpl.Spec.Spec.DeepCopy(),
	}
	if err := env.Client.Create(ctx, claim); err != nil {
		t.Fatalf("create claim: %v", err)
	}
	updatePodStatus(t, pod, func(p *corev1.Pod) {
		p.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "rdma", ResourceClaimName: ptr(claim.Name)}}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 cannot allocate all claims."}}
	})
	got := waitCapture(t, ns, "by-class", "ClaimNotAllocatable", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionScheduled, metav1.ConditionFalse, ringcapv1.ReasonClaimNotAllocatable)
	})
	if m := condition(got, ringcapv1.ConditionScheduled).Message; !strings.Contains(m, claim.Name) || !strings.Contains(m, "cannot allocate all claims") {
		t.Errorf("ClaimNotAllocatable message %q, want the claim and the scheduler's words", m)
	}
	if e := waitEvent(t, ns, "by-class", ringcapv1.ReasonClaimNotAllocatable, corev1.EventTypeWarning); !strings.Contains(e.Note, claim.Name) {
		t.Errorf("ClaimNotAllocatable event %q, want the claim", e.Note)
	}
	if got.Status.Phase != ringcapv1.PhasePending {
		t.Errorf("phase %s, want Pending", got.Status.Phase)
	}

	// Allocated and running: the status names the claim.
	bindPod(t, pod, "node-a")
	runPod(t, pod, "10.88.0.12")
	got = waitCapture(t, ns, "by-class", "Scheduled through the claim", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionScheduled, metav1.ConditionTrue, ringcapv1.ReasonScheduled) &&
			rc.Status.Running != nil && rc.Status.Running.DeviceClaim == claim.Name
	})
	if m := condition(got, ringcapv1.ConditionScheduled).Message; !strings.Contains(m, "its RDMA device through ResourceClaim "+claim.Name) {
		t.Errorf("Scheduled message %q, want the claim", m)
	}
	if got.Status.Running.DeviceClaimTemplate != "by-class-rdma" {
		t.Errorf("running.deviceClaimTemplate %q", got.Status.Running.DeviceClaimTemplate)
	}

	// The template goes with the capture (garbage collector, controller reference).
	if err := env.Client.Delete(ctx, rc); err != nil {
		t.Fatalf("delete capture: %v", err)
	}
	if err := waitFor(waitTimeout, func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(tpl), &resourcev1.ResourceClaimTemplate{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	}); err != nil {
		t.Errorf("template after the capture was deleted: %v", err)
	}
}

// A named template is referenced, not created; one that does not exist shows as such.
func TestNamedClaimTemplate(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "claims-named")
	newCapture(t, ns, "named", func(rc *ringcapv1.RingCapture) { rc.Spec.Receiver.ResourceClaimTemplateName = "rdma-port" })
	pod := waitPod(t, ns, "named")
	if len(pod.Spec.ResourceClaims) != 1 || *pod.Spec.ResourceClaims[0].ResourceClaimTemplateName != "rdma-port" ||
		len(pod.Spec.Containers[0].Resources.Claims) != 1 {
		t.Errorf("pod resourceClaims %+v receiver claims %+v, want rdma from rdma-port", pod.Spec.ResourceClaims, pod.Spec.Containers[0].Resources.Claims)
	}
	rc := waitCapture(t, ns, "named", "ClaimTemplateNotFound", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionScheduled, metav1.ConditionFalse, ringcapv1.ReasonClaimTemplateNotFound)
	})
	if m := condition(rc, ringcapv1.ConditionScheduled).Message; !strings.Contains(m, "ResourceClaimTemplate rdma-port does not exist") {
		t.Errorf("message %q", m)
	}
	waitEvent(t, ns, "named", ringcapv1.ReasonClaimTemplateNotFound, corev1.EventTypeWarning)
	list := &resourcev1.ResourceClaimTemplateList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil || len(list.Items) != 0 {
		t.Errorf("templates in %s: %d (%v), want none: the capture names its own", ns, len(list.Items), err)
	}
}

// A selector the API server's CEL compiler refuses leaves the capture without a pod,
// saying why.
func TestClaimTemplateRefused(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "claims-refused")
	newCapture(t, ns, "bad-cel", func(rc *ringcapv1.RingCapture) {
		rc.Spec.Receiver.DeviceClassName = "ringcap-rdma"
		rc.Spec.Receiver.Selector = `device.attributes["ringcap.io"].netdev ==`
	})
	rc := waitCapture(t, ns, "bad-cel", "ClaimTemplateRefused", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionScheduled, metav1.ConditionFalse, ringcapv1.ReasonClaimTemplateRefused)
	})
	if m := condition(rc, ringcapv1.ConditionScheduled).Message; !strings.Contains(m, "bad-cel-rdma") || !strings.Contains(m, "selector") {
		t.Errorf("message %q, want the template and the selector", m)
	}
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: controller.PodName("bad-cel")}, &corev1.Pod{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("pod of a capture whose template was refused: %v, want none", err)
	}
}

// The template follows the spec from run to run: a changed selector replaces it (its
// spec is immutable), and a spec back on the extended resource removes it.
func TestClaimTemplateAcrossRuns(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	ns := newNamespace(t, "claims-runs")
	newCapture(t, ns, "runs", func(rc *ringcapv1.RingCapture) {
		rc.Spec.Receiver.DeviceClassName = "ringcap-rdma"
		rc.Spec.Receiver.Selector = `device.attributes["ringcap.io"].ibdev == "rxe0"`
	})
	key := client.ObjectKey{Namespace: ns, Name: "runs-rdma"}
	first := &resourcev1.ResourceClaimTemplate{}
	pod := waitPod(t, ns, "runs")
	if err := env.Client.Get(ctx, key, first); err != nil {
		t.Fatalf("template of the first run: %v", err)
	}
	// finish runs the current pod to Succeeded, applies change to the spec and returns
	// the next run's pod.
	finish := func(pod *corev1.Pod, change func(rc *ringcapv1.RingCapture)) *corev1.Pod {
		t.Helper()
		bindPod(t, pod, "node-a")
		pod = runPod(t, pod, "10.88.0.14")
		terminateContainers(t, pod, corev1.PodSucceeded, map[string]int32{"receiver": 0}, nil)
		waitCapture(t, ns, "runs", "Succeeded", func(rc *ringcapv1.RingCapture) bool { return rc.Status.Phase == ringcapv1.PhaseSucceeded })
		rc := getCapture(t, ns, "runs")
		base := rc.DeepCopy()
		change(rc)
		if err := env.Client.Patch(ctx, rc, client.MergeFrom(base)); err != nil {
			t.Fatalf("change the capture: %v", err)
		}
		var next corev1.Pod
		if err := waitFor(waitTimeout, func() (bool, string) {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), &next)
			return err == nil && next.UID != pod.UID, fmt.Sprint(err)
		}); err != nil {
			t.Fatalf("no new pod: %v", err)
		}
		return &next
	}

	pod = finish(pod, func(rc *ringcapv1.RingCapture) {
		rc.Spec.Receiver.Selector = `device.attributes["ringcap.io"].ibdev == "rxe1"`
	})
	second := &resourcev1.ResourceClaimTemplate{}
	if err := env.Client.Get(ctx, key, second); err != nil {
		t.Fatalf("template of the second run: %v", err)
	}
	if second.UID == first.UID || second.Spec.Spec.Devices.Requests[0].Exactly.Selectors[0].CEL.Expression != `device.attributes["ringcap.io"].ibdev == "rxe1"` {
		t.Errorf("second run's template %s %+v, want a new one with the new selector", second.UID, second.Spec.Spec.Devices.Requests[0].Exactly.Selectors)
	}
	if len(pod.Spec.ResourceClaims) != 1 {
		t.Errorf("second pod claims %+v", pod.Spec.ResourceClaims)
	}

	pod = finish(pod, func(rc *ringcapv1.RingCapture) { rc.Spec.Receiver.DeviceClassName, rc.Spec.Receiver.Selector = "", "" })
	if len(pod.Spec.ResourceClaims) != 0 || pod.Spec.Containers[0].Resources.Limits.Name(ringcapv1.DefaultResourceName, "").Value() != 1 {
		t.Errorf("third pod claims %+v limits %v, want ringcap.io/rdma and no claim", pod.Spec.ResourceClaims, pod.Spec.Containers[0].Resources.Limits)
	}
	if err := env.Client.Get(ctx, key, &resourcev1.ResourceClaimTemplate{}); !apierrors.IsNotFound(err) {
		t.Errorf("template after the spec left claims: %v, want it deleted", err)
	}
}

// A template of the capture's name that is not the capture's is left alone, and the
// capture says so instead of claiming from it.
func TestClaimTemplateNameTaken(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	ns := newNamespace(t, "claims-taken")
	other := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken-rdma"}}
	other.Spec.Spec.Devices.Requests = []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}
	if err := env.Client.Create(ctx, other); err != nil {
		t.Fatalf("create the other template: %v", err)
	}
	newCapture(t, ns, "taken", func(rc *ringcapv1.RingCapture) { rc.Spec.Receiver.DeviceClassName = "ringcap-rdma" })
	rc := waitCapture(t, ns, "taken", "ClaimTemplateConflict", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionScheduled, metav1.ConditionFalse, ringcapv1.ReasonClaimTemplateConflict)
	})
	if m := condition(rc, ringcapv1.ConditionScheduled).Message; !strings.Contains(m, "taken-rdma exists and is not controlled by this RingCapture") {
		t.Errorf("message %q", m)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: controller.PodName("taken")}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod of a capture whose template name is taken: %v, want none", err)
	}
	got := &resourcev1.ResourceClaimTemplate{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(other), got); err != nil || got.UID != other.UID {
		t.Errorf("the other template: %v (uid %s, want %s untouched)", err, got.UID, other.UID)
	}
}
