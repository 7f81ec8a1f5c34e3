package controller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

func hostMode(rc *ringcapv1.RingCapture) { rc.Spec.Network.Mode = ringcapv1.NetworkModeHost }
func attachmentMode(rc *ringcapv1.RingCapture) {
	rc.Spec.Network = ringcapv1.NetworkSpec{Mode: ringcapv1.NetworkModeAttachment, Attachment: "macvlan-conf"}
}

// onNode runs the pod with the node's IP as its pod IP (hostNetwork).
func onNode(p *corev1.Pod) {
	running(p)
	p.Status.PodIP = "10.203.0.2"
}

// listeningOn is the receiver's report of listening on addr.
func listeningOn(addr, reason string) *statusdoc.Status {
	rs := recvStatus(statusdoc.StateListening, 0)
	rs.Endpoint.Address, rs.Endpoint.AddressReason = addr, reason
	rs.Endpoint.GID, rs.Endpoint.Netdev = "::ffff:"+addr, "veth1"
	return rs
}

func TestStatusEndpointPerNetworkMode(t *testing.T) {
	const hostReason = "the address of veth1, the netdev of RoCE v2 GID 1 of rxe1 port 1 the receiver uses"
	pod0 := listeningOn("0.0.0.0", "")
	tests := []struct {
		name                   string
		pod                    *corev1.Pod
		recv                   *statusdoc.Status
		wantAddr, wantNetwork  string
		reasonHas              string
		reachable, reachableIn string // "Status/Reason" of ExternallyReachable, a word of its message
	}{
		{"Pod mode: the pod IP, cluster-internal", testPod(running), pod0, "10.88.0.7", "Pod", "pod IP on the cluster network",
			"False/ClusterInternal", "10.88.0.7 is on the cluster network"},
		{"Pod mode before the receiver reports", testPod(running), nil, "10.88.0.7", "Pod", "pod IP",
			"False/ClusterInternal", "only if the cluster routes pod IPs"},
		{"Host mode: the RDMA netdev's address, not the node IP", testPodOf(3, hostMode, onNode), listeningOn("198.18.0.2", hostReason),
			"198.18.0.2", "Host", hostReason, "True/HostNetwork", "senders on the data network connect to 198.18.0.2:18515"},
		{"Host mode before the receiver reports: no address (the node IP is not where it listens)", testPodOf(3, hostMode, onNode), nil,
			"", "Host", "", "Unknown/EndpointNotChosen", "has not reported"},
		{"Attachment mode: the interface's address", testPodOf(3, attachmentMode, running), listeningOn("198.18.0.40", "the address of interface net1 of attachment obs/macvlan-conf"),
			"198.18.0.40", "Attachment", "interface net1", "True/AttachmentNetwork", "198.18.0.40:18515"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := ComputeStatus(defaulted("c"), Observed{Pod: tc.pod, Receiver: tc.recv, Now: t0})
			ep := st.Endpoint
			if tc.wantAddr == "" {
				if ep != nil && ep.Address != "" {
					t.Errorf("endpoint address %q, want none yet", ep.Address)
				}
			} else if ep == nil || ep.Address != tc.wantAddr || ep.Network != tc.wantNetwork || ep.Port != 18515 || !strings.Contains(ep.Reason, tc.reasonHas) {
				t.Errorf("endpoint %+v, want %s (%s) port 18515, reason with %q", ep, tc.wantAddr, tc.wantNetwork, tc.reasonHas)
			}
			if c := checkCondition(t, st.Conditions, ringcapv1.ConditionExternallyReachable, tc.reachable); c != nil && !strings.Contains(c.Message, tc.reachableIn) {
				t.Errorf("ExternallyReachable message %q does not say %q", c.Message, tc.reachableIn)
			}
		})
	}
}

// Two Host-mode captures on one node clash on their ports: the scheduler keeps the
// second Pending, and the status says why and what to do.
func TestStatusHostPortClash(t *testing.T) {
	unschedulable := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports."}}
	}
	st := ComputeStatus(defaulted("c"), Observed{Pod: testPodOf(3, hostMode, unschedulable), Now: t0})
	c := checkCondition(t, st.Conditions, ringcapv1.ConditionScheduled, "False/"+ringcapv1.ReasonHostPortInUse)
	for _, w := range []string{"host port 18515 (receiver.port) or 9100 (receiver.metricsPort)", "another Host-mode capture", "didn't have free ports"} {
		if c != nil && !strings.Contains(c.Message, w) {
			t.Errorf("Scheduled message %q does not say %q", c.Message, w)
		}
	}
	if st.Phase != ringcapv1.PhasePending {
		t.Errorf("phase %s, want Pending", st.Phase)
	}
	// A Pod-mode capture has no host ports: the scheduler's words stay as they are.
	st = ComputeStatus(defaulted("c"), Observed{Pod: testPodOf(3, nil, unschedulable), Now: t0})
	checkCondition(t, st.Conditions, ringcapv1.ConditionScheduled, "False/"+ringcapv1.ReasonUnschedulable)
}

// A packet endpoint is the groups joined, else the address, with the UDP ports.
func TestPacketDestination(t *testing.T) {
	for _, tc := range []struct {
		ep   ringcapv1.EndpointStatus
		want string
	}{
		{ringcapv1.EndpointStatus{Address: "10.8.0.7", UDPPorts: []int32{7148}}, "10.8.0.7 UDP ports 7148"},
		{ringcapv1.EndpointStatus{Address: "10.8.0.7", MulticastGroups: []string{"239.2.1.150", "239.2.1.151"}, UDPPorts: []int32{7148, 7149}},
			"groups 239.2.1.150, 239.2.1.151 at UDP ports 7148,7149"},
	} {
		if got := packetDestination(&tc.ep); got != tc.want {
			t.Errorf("packetDestination(%+v) = %q, want %q", tc.ep, got, tc.want)
		}
	}
}
