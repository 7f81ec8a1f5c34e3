package controller

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

func TestDecideIPCLock(t *testing.T) {
	const need = 1 << 30
	unlimited := &ringcapv1.MemlockLimit{Unlimited: true}
	big := &ringcapv1.MemlockLimit{Bytes: 2 << 30}
	small := &ringcapv1.MemlockLimit{Bytes: 8 << 20}
	for _, tc := range []struct {
		name   string
		policy ringcapv1.IPCLockPolicy
		nodes  []NodeMemlock
		grant  bool
		reason string
	}{
		{"always", ringcapv1.IPCLockAlways, []NodeMemlock{{"n1", unlimited}}, true, "Always"},
		{"never", ringcapv1.IPCLockNever, []NodeMemlock{{"n1", small}}, false, "must cover the 1.00 GiB"},
		{"auto, no RDMANode", ringcapv1.IPCLockAuto, nil, true, "no RDMANode reports"},
		{"auto, every node covers", ringcapv1.IPCLockAuto, []NodeMemlock{{"n1", unlimited}, {"n2", big}}, false, "not needed: containers may lock the 1.00 GiB the receiver pins on every node the pod may run on (n1, n2)"},
		{"auto, one node too low", ringcapv1.IPCLockAuto, []NodeMemlock{{"n1", unlimited}, {"n2", small}}, true, "node n2 lets containers lock 8.00 MiB, below the 1.00 GiB"},
		{"auto, one node unknown", ringcapv1.IPCLockAuto, []NodeMemlock{{"n1", big}, {"n2", nil}}, true, "node n2 reports no memlock limit"},
		{"empty policy is Auto", "", []NodeMemlock{{"n1", big}}, false, "not needed"},
	} {
		d := DecideIPCLock(tc.policy, need, tc.nodes)
		if d.Grant != tc.grant || !strings.Contains(d.Reason, tc.reason) {
			t.Errorf("%s: %+v, want grant %v and a reason with %q", tc.name, d, tc.grant, tc.reason)
		}
	}
}

func TestCandidateMemlocks(t *testing.T) {
	lim := &ringcapv1.MemlockLimit{Bytes: 1}
	rnodes := []ringcapv1.RDMANode{
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Status: ringcapv1.RDMANodeStatus{ContainerMemlock: lim}},
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Status: ringcapv1.RDMANodeStatus{ContainerMemlock: lim}},
	}
	nodes := []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}, {ObjectMeta: metav1.ObjectMeta{Name: "c"}}}
	got := candidateMemlocks(rnodes, nodes)
	if len(got) != 2 || got[0].Node != "a" || got[0].Limit != nil || got[1].Node != "b" || got[1].Limit != lim {
		t.Errorf("candidates %+v, want a (none) and b (its limit); not other (no such node), not c (no RDMANode)", got)
	}
}

func TestBuildPodWithoutIPCLock(t *testing.T) {
	rc := defaulted("x")
	rc.Spec.Ring.HugePages = true
	opts := DefaultPodOptions()
	opts.IPCLock = &IPCLockDecision{Reason: "not needed"}
	pod := BuildPod(rc, opts)
	recv := pod.Spec.Containers[0].SecurityContext
	if len(recv.Capabilities.Add) != 0 || !slices.Equal(recv.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("receiver capabilities %+v, want none added", recv.Capabilities)
	}
	if !*recv.RunAsNonRoot || *recv.RunAsUser != receiverUID {
		t.Errorf("receiver runs as %v (non-root %v), want %d", recv.RunAsUser, recv.RunAsNonRoot, receiverUID)
	}
	ps := pod.Spec.SecurityContext
	if ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault || !slices.Equal(ps.SupplementalGroups, []int64{0}) {
		t.Errorf("pod security context %+v, want RuntimeDefault seccomp and group 0 (huge pages without IPC_LOCK)", ps)
	}
	if pod.Annotations[AnnotationIPCLock] != "not needed" {
		t.Errorf("annotations %v", pod.Annotations)
	}
	run := RunningConfig(pod, nil)
	if run.IPCLock == nil || run.IPCLock.Granted || run.IPCLock.Reason != "not needed" {
		t.Errorf("running ipcLock %+v, want not granted, with the reason", run.IPCLock)
	}

	opts.IPCLock = &IPCLockDecision{Grant: true, Reason: "node n lets containers lock 8.0 MiB"}
	pod = BuildPod(rc, opts)
	if add := pod.Spec.Containers[0].SecurityContext.Capabilities.Add; !slices.Equal(add, []corev1.Capability{"IPC_LOCK"}) {
		t.Errorf("granted: capabilities added %v", add)
	}
	if pod.Spec.SecurityContext.SupplementalGroups != nil {
		t.Errorf("granted: supplemental groups %v, want none (IPC_LOCK allows huge pages)", pod.Spec.SecurityContext.SupplementalGroups)
	}
	if run := RunningConfig(pod, nil); !run.IPCLock.Granted {
		t.Errorf("running ipcLock %+v, want granted", run.IPCLock)
	}
}

func TestReaderRunsAs(t *testing.T) {
	rc := defaulted("x")
	uid, gid := int64(1000), int64(2000)
	rc.Spec.Readers = []ringcapv1.ReaderContainer{{Name: "a", RunAsUser: &uid, RunAsGroup: &gid}, {Name: "b"}}
	pod := BuildPod(rc, DefaultPodOptions())
	a, b := pod.Spec.Containers[1].SecurityContext, pod.Spec.Containers[2].SecurityContext
	if *a.RunAsUser != uid || *a.RunAsGroup != gid || a.RunAsNonRoot == nil || !*a.RunAsNonRoot {
		t.Errorf("reader a %+v, want uid 1000 gid 2000 non-root", a)
	}
	if b.RunAsUser != nil || b.RunAsNonRoot != nil {
		t.Errorf("reader b %+v, want its image's user", b)
	}
}

func TestIPCLockHint(t *testing.T) {
	refused := errors.New(`pods "x" is forbidden: violates PodSecurity "baseline:latest": non-default capabilities (container "receiver" must not include "IPC_LOCK" in securityContext.capabilities.add)`)
	if h := ipcLockHint(IPCLockDecision{Grant: true, Reason: "node n lets containers lock 8.0 MiB"}, refused); !strings.Contains(h, "because node n lets containers lock 8.0 MiB") || !strings.Contains(h, "receiver.ipcLock Never") {
		t.Errorf("hint %q", h)
	}
	if h := ipcLockHint(IPCLockDecision{}, refused); h != "" {
		t.Errorf("hint without IPC_LOCK: %q", h)
	}
}
