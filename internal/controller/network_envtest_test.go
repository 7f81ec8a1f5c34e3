//go:build envtest

package controller_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// Captures on the data network, through a real API server: the pods it admits per
// network mode, and the endpoint the status advertises.
func TestNetworkModes(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "network")
	reader := []ringcapv1.ReaderContainer{{Name: "verify", Args: []string{"ring", "read", "-k", "dada", "-s"}}}

	newCapture(t, ns, "host", func(rc *ringcapv1.RingCapture) {
		rc.Spec.Readers = reader
		rc.Spec.Network.Mode = ringcapv1.NetworkModeHost
		rc.Spec.Receiver.Port, rc.Spec.Receiver.MetricsPort = 20000, 20001
	})
	pod := waitPod(t, ns, "host")
	if !pod.Spec.HostNetwork || pod.Spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("Host mode pod: hostNetwork %v dnsPolicy %s", pod.Spec.HostNetwork, pod.Spec.DNSPolicy)
	}
	var hostPorts []int32
	for _, p := range pod.Spec.Containers[0].Ports {
		hostPorts = append(hostPorts, p.HostPort)
	}
	if len(hostPorts) != 2 || hostPorts[0] != 20000 || hostPorts[1] != 20001 {
		t.Errorf("Host mode pod host ports %v, want [20000 20001]", hostPorts)
	}
	bindPod(t, pod, "node-a")
	st := receiverStatus("Listening", 0)
	st.Endpoint.Address, st.Endpoint.Port = "198.18.0.2", 20000
	st.Endpoint.AddressReason = "the address of veth1, the netdev of RoCE v2 GID 1 of rxe1 port 1 the receiver uses"
	receivers.Set(ns, pod.Name, st)
	runPod(t, pod, "10.203.0.2") // the node's IP: hostNetwork
	rc := waitCapture(t, ns, "host", "ExternallyReachable", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionExternallyReachable, metav1.ConditionTrue, ringcapv1.ReasonHostNetwork)
	})
	if ep := rc.Status.Endpoint; ep == nil || ep.Address != "198.18.0.2" || ep.Port != 20000 || ep.Network != "Host" || !strings.Contains(ep.Reason, "veth1") {
		t.Errorf("Host mode endpoint %+v, want 198.18.0.2:20000 on veth1", ep)
	}
	if r := rc.Status.Running; r == nil || r.Network != "Host" || r.AllowedSenders != "listen-subnet" {
		t.Errorf("running %+v, want network Host, allowedSenders listen-subnet", r)
	}

	newCapture(t, ns, "attached", func(rc *ringcapv1.RingCapture) {
		rc.Spec.Readers = reader
		rc.Spec.Network = ringcapv1.NetworkSpec{Mode: ringcapv1.NetworkModeAttachment, Attachment: "macvlan-conf"}
	})
	pod = waitPod(t, ns, "attached")
	if a := pod.Annotations[ringcapv1.AnnotationNetworks]; a != "macvlan-conf" || pod.Spec.HostNetwork {
		t.Errorf("Attachment mode pod: networks annotation %q hostNetwork %v", a, pod.Spec.HostNetwork)
	}

	newCapture(t, ns, "pod", func(rc *ringcapv1.RingCapture) { rc.Spec.Readers = reader })
	pod = waitPod(t, ns, "pod")
	bindPod(t, pod, "node-a")
	st = receiverStatus("Listening", 0)
	st.Endpoint.Address = "0.0.0.0" // Pod mode: every address of the pod
	receivers.Set(ns, pod.Name, st)
	runPod(t, pod, "10.88.0.9")
	rc = waitCapture(t, ns, "pod", "ClusterInternal", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionExternallyReachable, metav1.ConditionFalse, ringcapv1.ReasonClusterInternal) &&
			rc.Status.Endpoint != nil && rc.Status.Endpoint.Address == "10.88.0.9"
	})
	if ep := rc.Status.Endpoint; ep == nil || ep.Network != "Pod" || !strings.Contains(ep.Reason, "cluster network") {
		t.Errorf("Pod mode endpoint %+v", ep)
	}
}
