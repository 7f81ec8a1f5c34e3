package controller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

// ring.hostIPC puts the capture pod in the node's IPC namespace; a private one otherwise.
func TestBuildPodHostIPC(t *testing.T) {
	rc := defaulted("c")
	if BuildPod(rc, DefaultPodOptions()).Spec.HostIPC {
		t.Errorf("pod shares the node's IPC namespace without ring.hostIPC")
	}
	rc.Spec.Ring.HostIPC = true
	if !BuildPod(rc, DefaultPodOptions()).Spec.HostIPC {
		t.Errorf("ring.hostIPC set, pod has its own IPC namespace")
	}
}

func TestExternalReaderSlots(t *testing.T) {
	pod := func(hostIPC bool, readers ...string) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{HostIPC: hostIPC, Containers: []corev1.Container{{Name: ringcapv1.ReceiverContainerName}}}}
		for _, r := range readers {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: r})
		}
		return p
	}
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		slots int
		want  int
		note  string
	}{
		{"no pod", nil, 2, 0, ""},
		{"private IPC namespace", pod(false, "a"), 2, 0, ""},
		{"hostIPC, every slot has a container", pod(true, "a", "b"), 2, 0, ""},
		{"hostIPC, no containers", pod(true), 1, 1, "; 1 reader slot is left for a reader outside the pod (hostIPC: the ring is in the node's IPC namespace)"},
		{"hostIPC, one of three", pod(true, "a"), 3, 2, "; 2 reader slots are left for readers outside the pod (hostIPC: the ring is in the node's IPC namespace)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := externalReaderSlots(tc.pod, tc.slots); got != tc.want {
				t.Errorf("externalReaderSlots = %d, want %d", got, tc.want)
			}
			if got := externalReadersNote(tc.pod, tc.slots); got != tc.note {
				t.Errorf("externalReadersNote = %q, want %q", got, tc.note)
			}
		})
	}
}

// The RingReady condition says which reader slots wait for readers outside the pod,
// counted from the ring the receiver created and the pod that runs.
func TestRingReadyNamesExternalReaderSlots(t *testing.T) {
	rc := defaulted("c")
	rs := recvStatus(statusdoc.StateListening, 0)
	rs.Ring.Readers = 2
	p := testPod(running) // receiver + one reader container
	p.Spec.HostIPC = true
	p.Spec.Containers = []corev1.Container{{Name: ringcapv1.ReceiverContainerName}, {Name: "reader"}}
	st := ComputeStatus(rc, Observed{Pod: p, Receiver: rs, Now: t0})
	c := apimeta.FindStatusCondition(st.Conditions, ringcapv1.ConditionRingReady)
	if c == nil || !strings.HasSuffix(c.Message, "2 readers; 1 reader slot is left for a reader outside the pod (hostIPC: the ring is in the node's IPC namespace)") {
		t.Errorf("RingReady %+v", c)
	}
	p.Spec.HostIPC = false
	st = ComputeStatus(rc, Observed{Pod: p, Receiver: rs, Now: t0})
	if c := apimeta.FindStatusCondition(st.Conditions, ringcapv1.ConditionRingReady); c == nil || strings.Contains(c.Message, "outside the pod") {
		t.Errorf("RingReady without hostIPC %+v", c)
	}
}
