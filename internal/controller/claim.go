package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// DeviceClaimName is the name of the capture pod's resource claim (spec.resourceClaims
// and the receiver's resources.claims) and of the one device request in the
// ResourceClaimTemplate the operator creates.
const DeviceClaimName = "rdma"

// usesClaim says whether the receiver's device comes through a DRA claim rather than
// the device plugin's extended resource.
func usesClaim(rx ringcapv1.ReceiverSpec) bool {
	return !rx.Protocol.IsPacket() && (rx.DeviceClassName != "" || rx.ResourceClaimTemplateName != "")
}

// ClaimTemplateName is the name of the ResourceClaimTemplate the operator creates for
// a RingCapture with receiver.deviceClassName: the capture's name with a "-rdma"
// suffix, shortened with a hash when that would exceed 253 characters.
func ClaimTemplateName(rcName string) string {
	const suffix = "-rdma"
	if len(rcName)+len(suffix) <= 253 {
		return rcName + suffix
	}
	sum := sha256.Sum256([]byte(rcName))
	return strings.TrimRight(rcName[:253-len(suffix)-9], "-.") + "-" + hex.EncodeToString(sum[:])[:8] + suffix
}

// podTemplateName is the ResourceClaimTemplate the pod claims from ("" when the
// device comes from the extended resource).
func podTemplateName(rc *ringcapv1.RingCapture) string {
	rx := rc.Spec.Receiver
	switch {
	case !usesClaim(rx):
		return "" // no claim, or a packet capture, which takes no RDMA device
	case rx.ResourceClaimTemplateName != "":
		return rx.ResourceClaimTemplateName
	case rx.DeviceClassName != "":
		return ClaimTemplateName(rc.Name)
	}
	return ""
}

// BuildClaimTemplate returns the ResourceClaimTemplate of a RingCapture with
// receiver.deviceClassName: one request named rdma for exactly one device of the class,
// with the receiver's selector when it has one. Nil for a capture without
// deviceClassName, or a packet (SPEAD, VDIF) capture. The controller reference is set by the caller.
func BuildClaimTemplate(rc *ringcapv1.RingCapture) *resourcev1.ResourceClaimTemplate {
	rx := rc.Spec.Receiver
	if rx.DeviceClassName == "" || rx.Protocol.IsPacket() {
		return nil
	}
	req := &resourcev1.ExactDeviceRequest{
		DeviceClassName: rx.DeviceClassName,
		AllocationMode:  resourcev1.DeviceAllocationModeExactCount,
		Count:           1,
	}
	if rx.Selector != "" {
		req.Selectors = []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: rx.Selector}}}
	}
	labels := func() map[string]string {
		return map[string]string{
			"app.kubernetes.io/name":      "ringcap",
			"app.kubernetes.io/component": "capture",
			LabelManagedBy:                ManagedByValue,
			LabelCapture:                  labelValue(rc.Name),
		}
	}
	return &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: ClaimTemplateName(rc.Name), Namespace: rc.Namespace, Labels: labels()},
		// The claims made from it carry the capture's labels too: the DRA driver names
		// the capture in its per-capture link counters from them.
		Spec: resourcev1.ResourceClaimTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels()}, Spec: resourcev1.ResourceClaimSpec{
			Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: DeviceClaimName, Exactly: req}}},
		}},
	}
}

// applyClaim wires the device claim into the pod: spec.resourceClaims from the
// template and the receiver container's resources.claims. A capture without a claim
// is left as it is.
func applyClaim(rc *ringcapv1.RingCapture, pod *corev1.Pod) {
	name := podTemplateName(rc)
	if name == "" {
		return
	}
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: DeviceClaimName, ResourceClaimTemplateName: &name}}
	for i := range pod.Spec.Containers {
		if c := &pod.Spec.Containers[i]; c.Name == ringcapv1.ReceiverContainerName {
			c.Resources.Claims = []corev1.ResourceClaim{{Name: DeviceClaimName}}
		}
	}
}

// podDeviceClaim returns the name of the ResourceClaim the pod's device came through,
// from the pod's status.resourceClaimStatuses, and whether the pod claims its device
// at all. The name is "" until the claim exists.
func podDeviceClaim(pod *corev1.Pod) (claim string, claims bool) {
	if pod == nil {
		return "", false
	}
	for _, c := range pod.Spec.ResourceClaims {
		claims = claims || c.Name == DeviceClaimName
	}
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.Name == DeviceClaimName && s.ResourceClaimName != nil {
			return *s.ResourceClaimName, claims
		}
	}
	return "", claims
}

// podClaimTemplate is the ResourceClaimTemplate the pod's device claim comes from ("" for none).
func podClaimTemplate(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	for _, c := range pod.Spec.ResourceClaims {
		if c.Name == DeviceClaimName && c.ResourceClaimTemplateName != nil {
			return *c.ResourceClaimTemplateName
		}
	}
	return ""
}

// ClaimObservation is what the operator read about a pending pod's device claim.
type ClaimObservation struct {
	// TemplateMissing: the pod's claim has not been created and its
	// ResourceClaimTemplate does not exist.
	TemplateMissing bool
	// Claim is the pod's ResourceClaim, nil when it was not read (the pod is scheduled,
	// claims nothing, or the claim does not exist yet).
	Claim *resourcev1.ResourceClaim
}

// explainClaim says, for a pod that waits for the scheduler, what its device claim
// waits for: the claim's creation from its template (or the template, when it does not
// exist), its allocation, or no node having a device that satisfies it.
func explainClaim(v *verdict, pod *corev1.Pod, obs ClaimObservation) {
	name, claims := podDeviceClaim(pod)
	if !claims || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
		return
	}
	tpl := podClaimTemplate(pod)
	switch {
	case name == "" && obs.TemplateMissing:
		v.scheduledReason = ringcapv1.ReasonClaimTemplateNotFound
		v.schedMsg = fmt.Sprintf("ResourceClaimTemplate %s does not exist in namespace %s: the pod's device claim cannot be created (create the template or change receiver.resourceClaimTemplateName)", tpl, pod.Namespace)
	case name == "":
		v.scheduledReason = ringcapv1.ReasonClaimPending
		v.schedMsg = fmt.Sprintf("waiting for the pod's device claim to be created from ResourceClaimTemplate %s (by kube-controller-manager's resource claim controller)", tpl)
	case obs.Claim == nil || obs.Claim.Status.Allocation != nil:
		// Not read, or allocated: the scheduler's own words stand.
	case v.scheduledReason == ringcapv1.ReasonUnschedulable:
		v.scheduledReason = ringcapv1.ReasonClaimNotAllocatable
		v.schedMsg = fmt.Sprintf("no node has a free device that satisfies ResourceClaim %s (from ResourceClaimTemplate %s: its DeviceClass and selector): %s",
			name, tpl, strings.TrimPrefix(v.schedMsg, "no node can run the capture pod: "))
	default:
		v.scheduledReason = ringcapv1.ReasonClaimPending
		v.schedMsg = fmt.Sprintf("waiting for the scheduler to allocate a device to ResourceClaim %s (from ResourceClaimTemplate %s)", name, tpl)
	}
}
