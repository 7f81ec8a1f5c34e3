//go:build envtest

package controller_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

// A SPEAD capture gets a pod that requests no RDMA device (no extended resource, no
// claim, no IPC_LOCK), declares its UDP ports and runs `ringcap recv --protocol spead`
// with the spec's sockets and placement rule; the receiver's packet counters reach
// status.packets with the loss.
func TestPacketCaptureSPEAD(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "packet-spead")
	newCapture(t, ns, "meerkat", func(rc *ringcapv1.RingCapture) {
		rc.Spec.Receiver = ringcapv1.ReceiverSpec{Protocol: ringcapv1.ProtocolSPEAD,
			UDP:   &ringcapv1.UDPSpec{Ports: []int32{7148, 7149}, MulticastGroups: []string{"239.2.1.150"}},
			SPEAD: &ringcapv1.SPEADSpec{TimestampItem: 0x1600, TimestampStep: 2097152, SyncTime: ptr(int64(1700000000)), SampleRate: ptr(int64(1712000000))}}
	})
	pod := waitPod(t, ns, "meerkat")
	recv := pod.Spec.Containers[0]
	args := strings.Join(recv.Args, " ")
	for _, want := range []string{"--protocol spead", "--udp-ports 7148,7149", "--multicast 239.2.1.150", "--udp-sockets 1", "--udp-buffer 67108864", "--reorder-blocks 4",
		"--spead-timestamp-id 0x1600 --spead-timestamp-step 2097152", "--spead-sync-time 1700000000", "--spead-sample-rate 1712000000", "--spead-stop-heaps 1"} {
		if !strings.Contains(args, want) {
			t.Errorf("receiver args %q: want %q", args, want)
		}
	}
	if strings.Contains(args, "--qps") || strings.Contains(args, "--transport") {
		t.Errorf("receiver args %q have RDMA flags", args)
	}
	for name := range recv.Resources.Limits {
		if strings.Contains(string(name), "rdma") {
			t.Errorf("SPEAD pod requests %s", name)
		}
	}
	if len(pod.Spec.ResourceClaims) != 0 {
		t.Errorf("SPEAD pod claims %v", pod.Spec.ResourceClaims)
	}
	if c := recv.SecurityContext.Capabilities; c == nil || len(c.Add) != 0 {
		t.Errorf("SPEAD receiver capabilities %+v, want none added", c)
	}
	udp := 0
	for _, p := range recv.Ports {
		if p.Protocol == corev1.ProtocolUDP && (p.ContainerPort == 7148 || p.ContainerPort == 7149) {
			udp++
		}
	}
	if udp != 2 {
		t.Errorf("receiver ports %v, want UDP 7148 and 7149", recv.Ports)
	}

	bindPod(t, pod, "node-udp")
	st := receiverStatus("Receiving", 1<<20)
	st.Packets = &statusdoc.Packets{Protocol: "spead", Packets: 1000, ReceivedPackets: 990, Late: 5, BeforeStart: 5, KernelDrops: 0}
	receivers.Set(ns, pod.Name, st)
	runPod(t, pod, "10.88.0.11")
	rc := waitCapture(t, ns, "meerkat", "status.packets", func(rc *ringcapv1.RingCapture) bool {
		return rc.Status.Packets != nil && rc.Status.Packets.Packets == 1000
	})
	if p := rc.Status.Packets; p.Protocol != "spead" || p.ReceivedPackets != 990 || p.Late != 5 || p.Loss != "0.50%" {
		t.Errorf("status.packets %+v, want spead, 990 received, 5 late, loss 0.50%%", p)
	}
	if ep := rc.Status.Endpoint; ep == nil || len(ep.UDPPorts) != 2 {
		t.Errorf("status.endpoint %+v, want the UDP ports", ep)
	}
}
