package controller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

func TestBuildPodWithDeviceClass(t *testing.T) {
	rc := defaulted("pulsar")
	rc.Spec.Receiver.DeviceClassName = "ringcap-roce-v2"
	rc.Spec.Receiver.Selector = `device.attributes["ringcap.io"].netdev == "eth1"`
	pod := BuildPod(rc, DefaultPodOptions())

	wantTemplate := "pulsar-rdma"
	if len(pod.Spec.ResourceClaims) != 1 || pod.Spec.ResourceClaims[0].Name != DeviceClaimName ||
		pod.Spec.ResourceClaims[0].ResourceClaimTemplateName == nil || *pod.Spec.ResourceClaims[0].ResourceClaimTemplateName != wantTemplate {
		t.Fatalf("pod resourceClaims %+v, want one named rdma from template %s", pod.Spec.ResourceClaims, wantTemplate)
	}
	recv := pod.Spec.Containers[0]
	if len(recv.Resources.Claims) != 1 || recv.Resources.Claims[0].Name != DeviceClaimName {
		t.Errorf("receiver resources.claims %+v, want [rdma]", recv.Resources.Claims)
	}
	for name, list := range map[string]corev1.ResourceList{"requests": recv.Resources.Requests, "limits": recv.Resources.Limits} {
		if _, ok := list["ringcap.io/rdma"]; ok {
			t.Errorf("receiver %s has ringcap.io/rdma beside the claim: %v", name, list)
		}
		if q := list[corev1.ResourceMemory]; q.Cmp(resource.MustParse("256Mi")) <= 0 {
			t.Errorf("receiver memory %s = %s, want the process memory plus the ring", name, q.String())
		}
	}
	for _, c := range pod.Spec.Containers[1:] {
		if len(c.Resources.Claims) != 0 {
			t.Errorf("reader %s claims %+v, want nothing", c.Name, c.Resources.Claims)
		}
	}
	if d := describeResources(pod); !strings.Contains(d, "claimed from ResourceClaimTemplate pulsar-rdma") || strings.Contains(d, "ringcap.io/rdma") {
		t.Errorf("event summary %q", d)
	}
}

func TestBuildPodWithNamedTemplate(t *testing.T) {
	rc := defaulted("pulsar")
	rc.Spec.Receiver.ResourceClaimTemplateName = "rdma-port"
	pod := BuildPod(rc, DefaultPodOptions())
	if len(pod.Spec.ResourceClaims) != 1 || *pod.Spec.ResourceClaims[0].ResourceClaimTemplateName != "rdma-port" {
		t.Fatalf("pod resourceClaims %+v, want rdma from rdma-port", pod.Spec.ResourceClaims)
	}
	if _, ok := pod.Spec.Containers[0].Resources.Limits["ringcap.io/rdma"]; ok {
		t.Errorf("receiver limits %v have ringcap.io/rdma beside the claim", pod.Spec.Containers[0].Resources.Limits)
	}
	if BuildClaimTemplate(rc) != nil {
		t.Errorf("a template built for a capture that names its own")
	}
}

func TestBuildPodWithoutClaim(t *testing.T) {
	pod := BuildPod(defaulted("pulsar"), DefaultPodOptions())
	if len(pod.Spec.ResourceClaims) != 0 || len(pod.Spec.Containers[0].Resources.Claims) != 0 {
		t.Errorf("claims %+v %+v on a pod using the extended resource", pod.Spec.ResourceClaims, pod.Spec.Containers[0].Resources.Claims)
	}
	if BuildClaimTemplate(defaulted("pulsar")) != nil {
		t.Errorf("a template built for a capture using the extended resource")
	}
}

func TestBuildClaimTemplate(t *testing.T) {
	rc := defaulted("pulsar")
	rc.Spec.Receiver.DeviceClassName = "ringcap-rdma"
	rc.Spec.Receiver.Selector = `device.attributes["ringcap.io"].ibdev == "rxe1"`
	tpl := BuildClaimTemplate(rc)
	want := resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
		Name: "rdma",
		Exactly: &resourcev1.ExactDeviceRequest{
			DeviceClassName: "ringcap-rdma",
			Selectors:       []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.attributes["ringcap.io"].ibdev == "rxe1"`}}},
			AllocationMode:  resourcev1.DeviceAllocationModeExactCount,
			Count:           1,
		},
	}}}}
	if tpl.Name != "pulsar-rdma" || tpl.Namespace != "obs" || tpl.Labels[LabelManagedBy] != ManagedByValue || tpl.Labels[LabelCapture] != "pulsar" {
		t.Errorf("template %s/%s labels %v", tpl.Namespace, tpl.Name, tpl.Labels)
	}
	if l := tpl.Spec.Labels; l[LabelManagedBy] != ManagedByValue || l[LabelCapture] != "pulsar" {
		t.Errorf("the claims made from the template get labels %v, want the capture's", l)
	}
	if !equality.Semantic.DeepEqual(tpl.Spec.Spec, want) {
		t.Errorf("template spec %+v, want %+v", tpl.Spec.Spec, want)
	}
	rc.Spec.Receiver.Selector = ""
	if s := BuildClaimTemplate(rc).Spec.Spec.Devices.Requests[0].Exactly.Selectors; s != nil {
		t.Errorf("selectors %+v without receiver.selector", s)
	}
}

func TestClaimTemplateName(t *testing.T) {
	if n := ClaimTemplateName("pulsar"); n != "pulsar-rdma" {
		t.Errorf("ClaimTemplateName(pulsar) = %q", n)
	}
	long := strings.Repeat("a", 253)
	n, m := ClaimTemplateName(long), ClaimTemplateName(long[:252]+"b")
	if len(n) > 253 || !strings.HasSuffix(n, "-rdma") || n == m {
		t.Errorf("long names %q and %q: want at most 253 characters, -rdma, distinct", n, m)
	}
}

func TestPodDeviceClaim(t *testing.T) {
	rc := defaulted("pulsar")
	rc.Spec.Receiver.DeviceClassName = "ringcap-rdma"
	pod := BuildPod(rc, DefaultPodOptions())
	if name, claims := podDeviceClaim(pod); name != "" || !claims {
		t.Errorf("before the claim exists: %q %v, want \"\" true", name, claims)
	}
	pod.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "other", ResourceClaimName: ptr("x")}, {Name: "rdma", ResourceClaimName: ptr("pulsar-capture-rdma-7x2k")}}
	if name, claims := podDeviceClaim(pod); name != "pulsar-capture-rdma-7x2k" || !claims {
		t.Errorf("with the claim: %q %v", name, claims)
	}
	if name, claims := podDeviceClaim(BuildPod(defaulted("p"), DefaultPodOptions())); name != "" || claims {
		t.Errorf("extended resource pod: %q %v", name, claims)
	}
	if name, claims := podDeviceClaim(nil); name != "" || claims {
		t.Errorf("no pod: %q %v", name, claims)
	}
}

func TestClaimStatus(t *testing.T) {
	byClass := func(rc *ringcapv1.RingCapture) { rc.Spec.Receiver.DeviceClassName = "ringcap-rdma" }
	named := func(rc *ringcapv1.RingCapture) { rc.Spec.Receiver.ResourceClaimTemplateName = "rdma-port" }
	withClaim := func(p *corev1.Pod) {
		p.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "rdma", ResourceClaimName: ptr("c-capture-rdma-x7k2p")}}
	}
	unschedulable := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 cannot allocate all claims."}}
	}
	unallocated := &resourcev1.ResourceClaim{}
	allocated := &resourcev1.ResourceClaim{Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{}}}
	tests := []struct {
		name    string
		pod     *corev1.Pod
		obs     ClaimObservation
		want    string // Scheduled condition: Status/Reason
		msg     string
		running string // status.running.deviceClaim
	}{
		{"claim not created yet", testPodOf(3, byClass, nil), ClaimObservation{},
			"False/ClaimPending", "created from ResourceClaimTemplate c-rdma", ""},
		{"named template missing", testPodOf(3, named, nil), ClaimObservation{TemplateMissing: true},
			"False/ClaimTemplateNotFound", "ResourceClaimTemplate rdma-port does not exist in namespace obs", ""},
		{"claim waits for allocation", testPodOf(3, byClass, withClaim), ClaimObservation{Claim: unallocated},
			"False/ClaimPending", "allocate a device to ResourceClaim c-capture-rdma-x7k2p", "c-capture-rdma-x7k2p"},
		{"claim cannot be allocated", testPodOf(3, byClass, chain(withClaim, unschedulable)), ClaimObservation{Claim: unallocated},
			"False/ClaimNotAllocatable", "no node has a free device that satisfies ResourceClaim c-capture-rdma-x7k2p (from ResourceClaimTemplate c-rdma: its DeviceClass and selector): 0/1 nodes are available: 1 cannot allocate all claims.", "c-capture-rdma-x7k2p"},
		{"allocated claim, unschedulable for another reason", testPodOf(3, byClass, chain(withClaim, unschedulable)), ClaimObservation{Claim: allocated},
			"False/Unschedulable", "no node can run the capture pod", "c-capture-rdma-x7k2p"},
		{"extended resource pod unschedulable", testPod(unschedulable), ClaimObservation{},
			"False/Unschedulable", "no node can run the capture pod", ""},
		{"scheduled with its claim", testPodOf(3, byClass, chain(withClaim, running)), ClaimObservation{},
			"True/Scheduled", "on node node-a, its RDMA device through ResourceClaim c-capture-rdma-x7k2p", "c-capture-rdma-x7k2p"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := defaulted("c")
			rc.Generation = 3
			st := ComputeStatus(rc, Observed{Pod: tc.pod, Claim: tc.obs, Now: t0})
			c := apimeta.FindStatusCondition(st.Conditions, ringcapv1.ConditionScheduled)
			if got := string(c.Status) + "/" + c.Reason; got != tc.want || !strings.Contains(c.Message, tc.msg) {
				t.Errorf("Scheduled = %s %q, want %s with %q", got, c.Message, tc.want, tc.msg)
			}
			if st.Phase != ringcapv1.PhasePending && tc.want != "True/Scheduled" {
				t.Errorf("phase %s, want Pending", st.Phase)
			}
			if st.Running.DeviceClaim != tc.running {
				t.Errorf("running.deviceClaim %q, want %q", st.Running.DeviceClaim, tc.running)
			}
			wantTpl := podClaimTemplate(tc.pod)
			if st.Running.DeviceClaimTemplate != wantTpl {
				t.Errorf("running.deviceClaimTemplate %q, want %q", st.Running.DeviceClaimTemplate, wantTpl)
			}
		})
	}
}
