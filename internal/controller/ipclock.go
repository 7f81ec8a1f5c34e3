package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// +kubebuilder:rbac:groups=ringcap.io,resources=rdmanodes,verbs=get;list
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list

// AnnotationIPCLock on a capture pod says why its receiver has IPC_LOCK or not.
const AnnotationIPCLock = "ringcap.io/ipc-lock"

// ipcLockMargin is what the receiver pins beyond the ring's bytes (queue pairs,
// completion queues, its own buffers), with room to spare.
const ipcLockMargin = 16 << 20

// IPCLockDecision is whether the receiver gets the IPC_LOCK capability, and why.
type IPCLockDecision struct {
	Grant  bool
	Reason string
}

// NodeMemlock is the memlock limit a node's RDMANode reports for containers (nil: none).
type NodeMemlock struct {
	Node  string
	Limit *ringcapv1.MemlockLimit
}

// DecideIPCLock decides the receiver's IPC_LOCK from the policy, the bytes it pins and
// the memlock limits of the nodes the pod may run on (Auto: granted unless every one
// of them is known to cover need).
func DecideIPCLock(policy ringcapv1.IPCLockPolicy, need int64, nodes []NodeMemlock) IPCLockDecision {
	switch policy {
	case ringcapv1.IPCLockAlways:
		return IPCLockDecision{Grant: true, Reason: "receiver.ipcLock is Always"}
	case ringcapv1.IPCLockNever:
		return IPCLockDecision{Reason: fmt.Sprintf("receiver.ipcLock is Never: the node's memlock limit must cover the %s the receiver pins", HumanBytes(need))}
	}
	if len(nodes) == 0 {
		return IPCLockDecision{Grant: true, Reason: "no RDMANode reports the memlock limit containers get on the nodes the pod may run on (the device plugin publishes it); set receiver.ipcLock Never where the container runtime's limit covers " + HumanBytes(need)}
	}
	var names []string
	for _, n := range nodes {
		switch {
		case n.Limit == nil:
			return IPCLockDecision{Grant: true, Reason: fmt.Sprintf("node %s reports no memlock limit for containers", n.Node)}
		case !n.Limit.Unlimited && n.Limit.Bytes < need:
			return IPCLockDecision{Grant: true, Reason: fmt.Sprintf("node %s lets containers lock %s, below the %s the receiver pins", n.Node, HumanBytes(n.Limit.Bytes), HumanBytes(need))}
		}
		names = append(names, n.Node)
	}
	return IPCLockDecision{Reason: fmt.Sprintf("not needed: containers may lock the %s the receiver pins on every node the pod may run on (%s)", HumanBytes(need), strings.Join(names, ", "))}
}

// ipcLockNeed is what the receiver pins: the ring and ipcLockMargin.
func ipcLockNeed(r ringcapv1.RingSpec) int64 { return RingBytes(r) + ipcLockMargin }

// decideIPCLock reads the memlock limits of the RDMANodes whose nodes match the
// capture's nodeSelector and decides its receiver's IPC_LOCK.
func (r *RingCaptureReconciler) decideIPCLock(ctx context.Context, rc *ringcapv1.RingCapture) (IPCLockDecision, error) {
	policy, need := rc.Spec.Receiver.IPCLock, ipcLockNeed(rc.Spec.Ring)
	if d, ok := packetIPCLock(rc); ok {
		return d, nil
	}
	if rc.Spec.Receiver.Protocol.IsPacket() {
		need = RingBytes(rc.Spec.Ring) // the ring locked in memory (ring.lockMemory), nothing registered
	}
	if policy == ringcapv1.IPCLockAlways || policy == ringcapv1.IPCLockNever {
		return DecideIPCLock(policy, need, nil), nil
	}
	var rnodes ringcapv1.RDMANodeList
	if err := r.APIReader.List(ctx, &rnodes); err != nil {
		return IPCLockDecision{}, fmt.Errorf("list RDMANodes for the receiver's memlock: %w", err)
	}
	var nodes corev1.NodeList
	sel := labels.SelectorFromSet(rc.Spec.NodeSelector)
	if err := r.APIReader.List(ctx, &nodes, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return IPCLockDecision{}, fmt.Errorf("list nodes matching the capture's nodeSelector: %w", err)
	}
	return DecideIPCLock(policy, need, candidateMemlocks(rnodes.Items, nodes.Items)), nil
}

// packetIPCLock decides IPC_LOCK for a packet (SPEAD, VDIF) capture under ipcLock Auto
// when the ring is not locked in memory: the receiver registers nothing with an RDMA
// device, so it pins nothing and needs no IPC_LOCK. ok is false when the usual decision
// applies (an RDMA capture, another policy, or ring.lockMemory, whose mlock of the ring
// the node's memlock limit must cover).
func packetIPCLock(rc *ringcapv1.RingCapture) (IPCLockDecision, bool) {
	rx := rc.Spec.Receiver
	if !rx.Protocol.IsPacket() || rc.Spec.Ring.LockMemory || (rx.IPCLock != "" && rx.IPCLock != ringcapv1.IPCLockAuto) {
		return IPCLockDecision{}, false
	}
	return IPCLockDecision{Reason: fmt.Sprintf("not needed: a %s receiver registers no memory with an RDMA device and ring.lockMemory is off", rx.Protocol)}, true
}

// candidateMemlocks are the memlock limits of the RDMANodes of the given nodes, by name.
func candidateMemlocks(rnodes []ringcapv1.RDMANode, nodes []corev1.Node) []NodeMemlock {
	names := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		names[n.Name] = true
	}
	var out []NodeMemlock
	for _, rn := range rnodes {
		if names[rn.Name] {
			out = append(out, NodeMemlock{Node: rn.Name, Limit: rn.Status.ContainerMemlock})
		}
	}
	slices.SortFunc(out, func(a, b NodeMemlock) int { return strings.Compare(a.Node, b.Node) })
	return out
}

// runningIPCLock is whether the pod's receiver has IPC_LOCK, and the operator's reason.
func runningIPCLock(pod *corev1.Pod) *ringcapv1.IPCLockStatus {
	for _, c := range pod.Spec.Containers {
		if c.Name != ringcapv1.ReceiverContainerName {
			continue
		}
		st := &ringcapv1.IPCLockStatus{Reason: pod.Annotations[AnnotationIPCLock]}
		if sc := c.SecurityContext; sc != nil && sc.Capabilities != nil {
			st.Granted = slices.Contains(sc.Capabilities.Add, "IPC_LOCK")
		}
		return st
	}
	return nil
}

// ipcLockHint explains a Pod Security refusal of the receiver's IPC_LOCK: why it was
// added, and what lets the pod run without it.
func ipcLockHint(lock IPCLockDecision, err error) string {
	if !lock.Grant || !strings.Contains(err.Error(), "IPC_LOCK") {
		return ""
	}
	return fmt.Sprintf(" (IPC_LOCK was added because %s; raise the container runtime's memlock limit on the node, e.g. LimitMEMLOCK=infinity for containerd, or set receiver.ipcLock Never, or label the namespace pod-security.kubernetes.io/enforce=privileged)", lock.Reason)
}
