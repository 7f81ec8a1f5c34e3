package controller

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

// podNetworkMode is the network a capture pod was built for (what it runs, whatever
// the spec says now).
func podNetworkMode(pod *corev1.Pod) ringcapv1.NetworkMode {
	switch {
	case pod.Spec.HostNetwork:
		return ringcapv1.NetworkModeHost
	case pod.Annotations[ringcapv1.AnnotationNetworks] != "":
		return ringcapv1.NetworkModeAttachment
	}
	return ringcapv1.NetworkModePod
}

// podIPReason is endpoint.reason in Pod mode.
const podIPReason = "the pod IP on the cluster network: senders in the cluster reach it, a machine outside only where the cluster routes pod IPs (spec.network.mode Host or Attachment puts the receiver on the data network)"

// endpointReason says how the endpoint's address was chosen: the pod IP in Pod mode,
// else the receiver's own account of the address it listens on.
func endpointReason(mode ringcapv1.NetworkMode, rs *statusdoc.Status) string {
	if mode == ringcapv1.NetworkModePod {
		return podIPReason
	}
	if rs != nil && rs.Endpoint.AddressReason != "" {
		return rs.Endpoint.AddressReason
	}
	return "the receiver has not reported the address it listens on yet"
}

// receiverAddress is the address the receiver reports listening on ("" when it
// listens on every address or has not said).
func receiverAddress(rs *statusdoc.Status) string {
	if rs == nil {
		return ""
	}
	switch a := rs.Endpoint.Address; a {
	case "0.0.0.0", "::":
		return ""
	default:
		return a
	}
}

// endpoint is where senders connect: in Pod mode the pod's IP, in Host and Attachment
// mode only the address the receiver reports listening on (the pod IP there is the
// node's or the cluster network's, where the receiver does not listen); the handshake
// port is the pod's (what it runs, not what the spec asks now), refined by the
// receiver's report.
func endpoint(pod *corev1.Pod, rs *statusdoc.Status, prev *ringcapv1.EndpointStatus) *ringcapv1.EndpointStatus {
	if pod == nil {
		return prev
	}
	mode := podNetworkMode(pod)
	ep := &ringcapv1.EndpointStatus{Port: containerPort(pod, "handshake")}
	if prev != nil {
		ep = prev.DeepCopy()
	}
	ep.UDPPorts = podUDPPorts(pod) // packet.go
	if mode == ringcapv1.NetworkModePod && pod.Status.PodIP != "" {
		ep.Address = pod.Status.PodIP
	}
	if a := receiverAddress(rs); a != "" {
		ep.Address = a
	}
	ep.Network, ep.Reason = string(mode), endpointReason(mode, rs)
	if rs != nil {
		e := rs.Endpoint
		if e.Port != 0 {
			ep.Port = apiInt32(e.Port)
		}
		ep.Device, ep.IBPort, ep.GID, ep.Netdev = e.Device, apiInt32(e.IBPort), e.GID, e.Netdev
		ep.MulticastGroups = e.MulticastGroups
		if e.GIDIndex != nil && *e.GIDIndex >= 0 { // -1: not chosen yet
			ep.GIDIndex = ptr(apiInt32(*e.GIDIndex))
		}
	}
	if ep.Address == "" && ep.Device == "" && len(ep.MulticastGroups) == 0 {
		return nil
	}
	return ep
}

// externallyReachableCondition says whether a sender outside the cluster can reach the
// endpoint: not in Pod mode (the pod IP is cluster-internal unless the cluster routes
// it), yes in Host and Attachment mode once the receiver listens on its address.
func externallyReachableCondition(pod *corev1.Pod, ep *ringcapv1.EndpointStatus) metav1.Condition {
	const t = ringcapv1.ConditionExternallyReachable
	if pod == nil {
		return condition(t, metav1.ConditionUnknown, ringcapv1.ReasonEndpointNotChosen, "the capture pod does not exist yet")
	}
	mode := podNetworkMode(pod)
	switch {
	case mode == ringcapv1.NetworkModePod:
		addr := "the pod IP"
		if ep != nil && ep.Address != "" {
			addr = ep.Address
		}
		return condition(t, metav1.ConditionFalse, ringcapv1.ReasonClusterInternal,
			fmt.Sprintf("Pod mode: the endpoint %s is on the cluster network; a sender outside the cluster reaches it only if the cluster routes pod IPs to it; spec.network.mode Host or Attachment listens on the data network", addr))
	case ep == nil || (ep.Address == "" && len(ep.MulticastGroups) == 0) || (ep.Device == "" && len(ep.UDPPorts) == 0):
		return condition(t, metav1.ConditionUnknown, ringcapv1.ReasonEndpointNotChosen,
			string(mode)+" mode: the receiver has not reported the address it listens on yet")
	}
	reason := ringcapv1.ReasonHostNetwork
	if mode == ringcapv1.NetworkModeAttachment {
		reason = ringcapv1.ReasonAttachmentNetwork
	}
	if len(ep.UDPPorts) > 0 {
		return condition(t, metav1.ConditionTrue, reason,
			fmt.Sprintf("senders on the data network send to %s (%s mode: %s)", packetDestination(ep), mode, ep.Reason))
	}
	return condition(t, metav1.ConditionTrue, reason,
		fmt.Sprintf("senders on the data network connect to %s:%d (%s mode: %s)", ep.Address, ep.Port, mode, ep.Reason))
}

// explainHostPorts turns the scheduler's "didn't have free ports" into what to do: a
// Host-mode capture declares its handshake and metrics ports as host ports, so the
// scheduler keeps it off a node where another pod holds one of them.
func explainHostPorts(v *verdict, pod *corev1.Pod) {
	if pod == nil || !pod.Spec.HostNetwork || v.scheduledReason != ringcapv1.ReasonUnschedulable || !strings.Contains(v.schedMsg, "free ports") {
		return
	}
	v.scheduledReason = ringcapv1.ReasonHostPortInUse
	if udp := podUDPPorts(pod); len(udp) > 0 {
		v.schedMsg = fmt.Sprintf("Host mode: every node that could run the capture already has a pod holding one of UDP host ports %s (receiver.udp.ports) or TCP host port %d (receiver.metricsPort), for example another Host-mode capture; give this capture other ports. %s",
			joinInts(udp), containerPort(pod, "metrics"), v.schedMsg)
		return
	}
	v.schedMsg = fmt.Sprintf("Host mode: every node that could run the capture already has a pod holding host port %d (receiver.port) or %d (receiver.metricsPort), for example another Host-mode capture; give this capture other ports. %s",
		containerPort(pod, "handshake"), containerPort(pod, "metrics"), v.schedMsg)
}

// packetDestination is where a packet sender sends, as the conditions say it: the
// multicast groups joined, else the address, and the UDP ports ("groups 239.2.1.150,
// 239.2.1.151 at UDP ports 7148,7149", "10.8.0.7 UDP ports 7148").
func packetDestination(ep *ringcapv1.EndpointStatus) string {
	at := ep.Address
	if len(ep.MulticastGroups) > 0 {
		at = "groups " + strings.Join(ep.MulticastGroups, ", ") + " at"
	}
	return at + " UDP ports " + joinInts(ep.UDPPorts)
}
