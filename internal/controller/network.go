package controller

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// The network of a capture pod (spec.network). In Pod mode the receiver listens on every
// address of the pod's own network namespace, as it always did. In Host mode the pod runs
// in the node's network namespace and the receiver listens only on the address of the
// RDMA netdev whose RoCE v2 GID it uses (`--listen-on rdma`); its handshake and metrics
// ports are declared as host ports, so the scheduler's NodePorts filter keeps two
// captures that would clash on a port off the same node (the second stays Pending, and
// the status says why). In Attachment mode the pod gets a secondary interface through
// the k8s.v1.cni.cncf.io/networks annotation and the receiver listens on it, with the
// RoCE v2 GID of its address (`--listen-on attachment=NS/NAME`).

const (
	// EnvPodIP is the receiver's pod IP (the node's IP in Host mode), where it serves
	// /metrics and /status for the operator.
	EnvPodIP = "POD_IP"
	// EnvNetworkStatus carries the pod's network-status annotation (downward API) into
	// the receiver, which finds its attachment's interface there.
	EnvNetworkStatus = "RINGCAP_NETWORK_STATUS"

	// listenOnRDMA and listenOnAttachment are `ringcap recv --listen-on` values.
	listenOnRDMA       = "rdma"
	listenOnAttachment = "attachment="
	// allowListenSubnet is the `ringcap recv --allowed-senders` value that allows the
	// subnet of the address the receiver listens on.
	allowListenSubnet = "listen-subnet"
	allowAny          = "any"
)

// networkMode is spec.network.mode with its default.
func networkMode(rc *ringcapv1.RingCapture) ringcapv1.NetworkMode {
	if rc.Spec.Network.Mode == "" {
		return ringcapv1.NetworkModePod
	}
	return rc.Spec.Network.Mode
}

// attachmentName is spec.network.attachment as namespace/name (the form a meta-plugin's
// network-status annotation names it by).
func attachmentName(rc *ringcapv1.RingCapture) string {
	a := rc.Spec.Network.Attachment
	if a == "" || strings.Contains(a, "/") {
		return a
	}
	return rc.Namespace + "/" + a
}

// listenArgs are the receiver's --listen, --listen-on, --listen-interface and
// --allowed-senders arguments for the capture's network.
func listenArgs(rc *ringcapv1.RingCapture) []string {
	port := strconv.Itoa(int(rc.Spec.Receiver.Port))
	var args []string
	switch networkMode(rc) {
	case ringcapv1.NetworkModeHost:
		args = []string{"--listen", ":" + port, "--listen-on", listenOnRDMA}
	case ringcapv1.NetworkModeAttachment:
		args = []string{"--listen", ":" + port, "--listen-on", listenOnAttachment + attachmentName(rc)}
		if i := rc.Spec.Network.Interface; i != "" {
			args = append(args, "--listen-interface", i)
		}
	default:
		args = []string{"--listen", "0.0.0.0:" + port}
	}
	if a := allowedSendersArg(rc); a != allowAny {
		args = append(args, "--allowed-senders", a)
	}
	return args
}

// allowedSendersArg is the sender allowlist: the spec's CIDRs, else what is safe for the
// mode (any sender on the pod network, whose reach the cluster's network policies
// govern; only the listening subnet on the data network).
func allowedSendersArg(rc *ringcapv1.RingCapture) string {
	if cidrs := rc.Spec.Network.AllowedSenders; len(cidrs) > 0 {
		s := make([]string, len(cidrs))
		for i, c := range cidrs {
			s[i] = string(c)
		}
		return strings.Join(s, ",")
	}
	if networkMode(rc) == ringcapv1.NetworkModePod {
		return allowAny
	}
	return allowListenSubnet
}

// metricsAddr is the receiver's --metrics-addr: every address of the pod, but in Host
// mode only the node's IP (the pod IP), not the data network.
func metricsAddr(rc *ringcapv1.RingCapture) string {
	port := strconv.Itoa(int(rc.Spec.Receiver.MetricsPort))
	if networkMode(rc) == ringcapv1.NetworkModeHost {
		return "$(" + EnvPodIP + "):" + port
	}
	return ":" + port
}

// applyNetwork puts the capture's network into its pod: host networking and host ports
// in Host mode, the attachment annotation and the network-status environment in
// Attachment mode.
func applyNetwork(rc *ringcapv1.RingCapture, pod *corev1.Pod) {
	recv := &pod.Spec.Containers[0]
	switch networkMode(rc) {
	case ringcapv1.NetworkModeHost:
		pod.Spec.HostNetwork = true
		pod.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
		for i := range recv.Ports {
			recv.Ports[i].HostPort = recv.Ports[i].ContainerPort
		}
		recv.Env = append(recv.Env, corev1.EnvVar{Name: EnvPodIP, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}})
	case ringcapv1.NetworkModeAttachment:
		pod.Annotations[ringcapv1.AnnotationNetworks] = rc.Spec.Network.Attachment
		recv.Env = append(recv.Env, corev1.EnvVar{Name: EnvNetworkStatus, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + ringcapv1.AnnotationNetworkStatus + "']"}}})
	}
}

// networkFromArgs reads the running network and allowlist back from the receiver's
// arguments, in the words of status.running.
func networkFromArgs(flag func(string) string) (network, allowed string) {
	switch on := flag("--listen-on"); {
	case on == listenOnRDMA:
		network = string(ringcapv1.NetworkModeHost)
	case strings.HasPrefix(on, listenOnAttachment):
		network = string(ringcapv1.NetworkModeAttachment) + " " + strings.TrimPrefix(on, listenOnAttachment)
		if i := flag("--listen-interface"); i != "" {
			network += " interface " + i
		}
	default:
		network = string(ringcapv1.NetworkModePod)
	}
	allowed = flag("--allowed-senders")
	if allowed == "" {
		allowed = allowAny
	}
	return network, allowed
}
