package controller

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

// speadCapture is a defaulted SPEAD capture with the API's udp defaults.
func speadCapture(name string) *ringcapv1.RingCapture {
	rc := defaulted(name)
	rx := &rc.Spec.Receiver
	rx.Protocol = ringcapv1.ProtocolSPEAD
	rx.UDP = &ringcapv1.UDPSpec{Ports: []int32{7148, 7149}, MulticastGroups: []string{"239.2.1.150", "239.2.1.151"}, Interface: "eth1",
		SocketsPerPort: 2, CPUs: "auto", BufferBytes: 64 << 20, ReorderBlocks: 4, IdleTimeout: &metav1.Duration{Duration: 90 * time.Second}}
	rx.SPEAD = &ringcapv1.SPEADSpec{TimestampItem: 0x1600, TimestampStep: 2097152,
		ChannelItem: ptr(int32(0x4103)), Channels: &ringcapv1.SPEADChannels{First: 0, Step: 256, Count: 16},
		HeapBytes: ptr(int64(262144)), SyncTimeItem: ptr(int32(0x1027)), SampleRate: ptr(int64(1712000000)), StartTimestamp: ptr(int64(0)),
		StopHeaps: ptr(int32(16))}
	return rc
}

func vdifCapture(name string) *ringcapv1.RingCapture {
	rc := defaulted(name)
	rx := &rc.Spec.Receiver
	rx.Protocol = ringcapv1.ProtocolVDIF
	rx.UDP = &ringcapv1.UDPSpec{Ports: []int32{2630}, Address: "10.8.0.7", SocketsPerPort: 1, BufferBytes: 64 << 20, ReorderBlocks: 2}
	rx.VDIF = &ringcapv1.VDIFSpec{FramesPerSecond: 25600, Threads: []int32{0, 1, 2, 3}, PayloadBytes: ptr(int32(8000)), Start: "2026-11-28T13:45:00Z"}
	return rc
}

// A SPEAD capture's receiver gets the contract's flags from the spec and none of the
// RDMA ones.
func TestReceiverArgsSPEAD(t *testing.T) {
	got := strings.Join(ReceiverArgs(speadCapture("s")), " ")
	want := "recv -k dada --create -b 524288 -n 4 -a 4096 -r 1 --protocol spead --listen 0.0.0.0:18515 " +
		"--udp-ports 7148,7149 --multicast 239.2.1.150,239.2.1.151 --multicast-interface eth1 --udp-sockets 2 --udp-cpus auto --udp-buffer 67108864 --reorder-blocks 4 --udp-idle-timeout 1m30s " +
		"--spead-timestamp-id 0x1600 --spead-timestamp-step 2097152 --spead-channel-id 0x4103 --spead-channels 0:256:16 --spead-heap-bytes 262144 " +
		"--spead-sync-time-id 0x1027 --spead-sample-rate 1712000000 --spead-stop-heaps 16 --metrics-addr :9100 --summary-file /dev/termination-log"
	if got != want {
		t.Errorf("args\n got %s\nwant %s", got, want)
	}
	for _, rdma := range []string{"--qps", "--mode", "--mr", "--transport", "--msg-bytes", "--rx-depth", "--listen-on"} {
		if strings.Contains(got, rdma+" ") {
			t.Errorf("SPEAD args have the RDMA flag %s: %s", rdma, got)
		}
	}
}

// A VDIF capture in Host mode binds its sockets on the node (no --listen-on rdma: it
// has no RDMA device's GID), with the spec's allowlist only.
func TestReceiverArgsVDIFHost(t *testing.T) {
	rc := vdifCapture("v")
	rc.Spec.Network.Mode = ringcapv1.NetworkModeHost
	got := strings.Join(ReceiverArgs(rc), " ")
	want := "recv -k dada --create -b 524288 -n 4 -a 4096 -r 1 --protocol vdif --listen :18515 " +
		"--udp-ports 2630 --udp-address 10.8.0.7 --udp-sockets 1 --udp-buffer 67108864 --reorder-blocks 2 " +
		"--vdif-frames-per-second 25600 --vdif-threads 0,1,2,3 --vdif-payload-bytes 8000 --vdif-start 2026-11-28T13:45:00Z " +
		"--metrics-addr $(POD_IP):9100 --summary-file /dev/termination-log"
	if got != want {
		t.Errorf("args\n got %s\nwant %s", got, want)
	}
	rc.Spec.Network.AllowedSenders = []ringcapv1.CIDR{"198.18.0.0/24"}
	if a := ReceiverArgs(rc); argAfterFlag(a, "--allowed-senders") != "198.18.0.0/24" {
		t.Errorf("Host-mode VDIF with allowedSenders: args %q", a)
	}
	rc.Spec.Network = ringcapv1.NetworkSpec{Mode: ringcapv1.NetworkModeAttachment, Attachment: "data/macvlan", Interface: "net1"}
	if a := strings.Join(ReceiverArgs(rc), " "); !strings.Contains(a, "--listen-on attachment=data/macvlan --listen-interface net1 --allowed-senders listen-subnet --udp-ports 2630") {
		t.Errorf("Attachment-mode VDIF args %s", a)
	}
}

func argAfterFlag(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// A packet capture's pod requests no RDMA device (no extended resource, no claim, no
// IPC_LOCK for registration) and declares its UDP ports, as host ports in Host mode.
func TestBuildPodPacket(t *testing.T) {
	rc := speadCapture("s")
	rc.Spec.Receiver.DeviceClassName = "ringcap-rdma" // refused by the API; ignored here too
	pod := BuildPod(rc, DefaultPodOptions())
	recv := pod.Spec.Containers[0]
	for name := range recv.Resources.Limits {
		if strings.Contains(string(name), "rdma") {
			t.Errorf("packet capture requests %s", name)
		}
	}
	if len(pod.Spec.ResourceClaims) != 0 || len(recv.Resources.Claims) != 0 {
		t.Errorf("packet capture claims a device: %v %v", pod.Spec.ResourceClaims, recv.Resources.Claims)
	}
	want := []corev1.ContainerPort{
		{Name: "udp-7148", ContainerPort: 7148, Protocol: corev1.ProtocolUDP},
		{Name: "udp-7149", ContainerPort: 7149, Protocol: corev1.ProtocolUDP},
		{Name: "metrics", ContainerPort: 9100, Protocol: corev1.ProtocolTCP},
	}
	if !slices.Equal(recv.Ports, want) {
		t.Errorf("ports %v, want %v", recv.Ports, want)
	}
	if got := podUDPPorts(pod); !slices.Equal(got, []int32{7148, 7149}) {
		t.Errorf("podUDPPorts %v", got)
	}
	rc.Spec.Network.Mode = ringcapv1.NetworkModeHost
	pod = BuildPod(rc, DefaultPodOptions())
	for _, p := range pod.Spec.Containers[0].Ports {
		if p.HostPort != p.ContainerPort {
			t.Errorf("Host mode port %s: hostPort %d, want %d", p.Name, p.HostPort, p.ContainerPort)
		}
	}
	if BuildClaimTemplate(rc) != nil {
		t.Error("packet capture with deviceClassName gets a claim template")
	}
	// The RDMA capture keeps its device and handshake port.
	rdma := BuildPod(defaulted("r"), DefaultPodOptions())
	if q := rdma.Spec.Containers[0].Resources.Limits[ringcapv1.DefaultResourceName]; q.String() != "1" {
		t.Errorf("RDMA capture's %s limit %s, want 1", ringcapv1.DefaultResourceName, q.String())
	}
	if rdma.Spec.Containers[0].Ports[0].Name != "handshake" {
		t.Errorf("RDMA capture's ports %v", rdma.Spec.Containers[0].Ports)
	}
}

// A packet capture under ipcLock Auto needs no IPC_LOCK unless the ring is locked.
func TestPacketIPCLock(t *testing.T) {
	rc := vdifCapture("v")
	rc.Spec.Receiver.IPCLock = ringcapv1.IPCLockAuto
	if d, ok := packetIPCLock(rc); !ok || d.Grant || !strings.Contains(d.Reason, "not needed") {
		t.Errorf("VDIF capture: %+v %v, want no IPC_LOCK, not needed", d, ok)
	}
	rc.Spec.Ring.LockMemory = true
	if _, ok := packetIPCLock(rc); ok {
		t.Error("a locked ring takes the memlock decision")
	}
	rc.Spec.Ring.LockMemory = false
	rc.Spec.Receiver.IPCLock = ringcapv1.IPCLockAlways
	if _, ok := packetIPCLock(rc); ok {
		t.Error("ipcLock Always takes the policy's decision")
	}
	if _, ok := packetIPCLock(defaulted("r")); ok {
		t.Error("an RDMA capture takes the memlock decision")
	}
}

// status.packets copies the receiver's counters, and the loss counts every lost reason
// over everything sent.
func TestPacketsStatus(t *testing.T) {
	if PacketsStatus(nil) != nil {
		t.Error("no packets section: want nil")
	}
	p := &statusdoc.Packets{Protocol: "spead", Packets: 9990, ReceivedPackets: 9970, ReceivedBytes: 9970 * 8192, Late: 3, OutOfWindow: 2,
		Duplicate: 1, Malformed: 1, Invalid: 1, OutOfRange: 1, BeforeStart: 10, Control: 1, KernelDrops: 10, Truncated: 4, ZeroFilledBytes: 8192 * 19, Blocks: 7}
	got := PacketsStatus(p)
	want := ringcapv1.PacketStatus{Protocol: "spead", Packets: 9990, ReceivedPackets: 9970, ReceivedBytes: 9970 * 8192, Late: 3, OutOfWindow: 2,
		Duplicate: 1, Malformed: 1, Invalid: 1, OutOfRange: 1, BeforeStart: 10, Control: 1, KernelDrops: 10, Truncated: 4, ZeroFilledBytes: 8192 * 19, Blocks: 7,
		Loss: "0.19%"} // (3+2+1+1+1+1+10) / (9990+10)
	if *got != want {
		t.Errorf("status.packets\n got %+v\nwant %+v", *got, want)
	}
	for _, tc := range []struct {
		p    statusdoc.Packets
		want string
	}{
		{statusdoc.Packets{}, ""},
		{statusdoc.Packets{Packets: 100, ReceivedPackets: 100}, "0%"},
		{statusdoc.Packets{Packets: 100, ReceivedPackets: 90, BeforeStart: 9, Control: 1}, "0%"},
		{statusdoc.Packets{KernelDrops: 5}, "100.00%"},
		{statusdoc.Packets{Packets: 1_000_000_000, Late: 1}, "<0.01%"},
		{statusdoc.Packets{Packets: 3, Duplicate: 1}, "33.33%"},
	} {
		if got := PacketLoss(&tc.p); got != tc.want {
			t.Errorf("PacketLoss(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
}

// The receiver's packets section reaches status.packets while it runs and from its
// final summary; a SPEAD endpoint names its UDP ports.
func TestComputeStatusPackets(t *testing.T) {
	rc := speadCapture("s")
	pod := BuildPod(rc, DefaultPodOptions())
	pod.Spec.NodeName = "n1"
	pod.Status.PodIP = "10.88.0.7"
	rs := &statusdoc.Status{Version: statusdoc.Version, State: statusdoc.StateReceiving,
		Packets: &statusdoc.Packets{Protocol: "spead", Packets: 10, ReceivedPackets: 9, Late: 1}}
	st := ComputeStatus(rc, Observed{Pod: pod, Receiver: rs})
	if st.Packets == nil || st.Packets.Packets != 10 || st.Packets.Late != 1 || st.Packets.Loss != "10.00%" {
		t.Errorf("status.packets %+v", st.Packets)
	}
	if st.Endpoint == nil || !slices.Equal(st.Endpoint.UDPPorts, []int32{7148, 7149}) {
		t.Errorf("status.endpoint %+v, want UDP ports 7148,7149", st.Endpoint)
	}
	if st.Endpoint.Port != 0 {
		t.Errorf("status.endpoint.port %d: a SPEAD capture has no handshake port", st.Endpoint.Port)
	}
	if rdma := ComputeStatus(defaulted("r"), Observed{Pod: BuildPod(defaulted("r"), DefaultPodOptions()),
		Receiver: &statusdoc.Status{Version: statusdoc.Version, State: statusdoc.StateReceiving}}); rdma.Packets != nil {
		t.Errorf("RDMA capture has status.packets %+v", rdma.Packets)
	}
}

// A Host-mode multicast capture binds the wildcard address: its endpoint is the groups
// the receiver reports joined, at its UDP ports, and says so in the conditions.
func TestComputeStatusMulticastEndpoint(t *testing.T) {
	rc := speadCapture("s")
	rc.Spec.Network.Mode = ringcapv1.NetworkModeHost
	pod := BuildPod(rc, DefaultPodOptions())
	pod.Spec.NodeName = "n1"
	pod.Status.PodIP = "10.0.0.5"
	rs := &statusdoc.Status{Version: statusdoc.Version, State: statusdoc.StateListening,
		Endpoint: statusdoc.Endpoint{Address: "0.0.0.0", Port: 7148, AddressReason: "groups joined on eth1", MulticastGroups: []string{"239.2.1.150", "239.2.1.151"}}}
	st := ComputeStatus(rc, Observed{Pod: pod, Receiver: rs})
	ep := st.Endpoint
	if ep == nil || !slices.Equal(ep.MulticastGroups, []string{"239.2.1.150", "239.2.1.151"}) || ep.Address != "" || !slices.Equal(ep.UDPPorts, []int32{7148, 7149}) {
		t.Fatalf("status.endpoint %+v, want the groups at ports 7148,7149 and no address", ep)
	}
	var msgs []string
	for _, c := range st.Conditions {
		msgs = append(msgs, c.Type+": "+c.Message)
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{"ReceiverReady: senders send to groups 239.2.1.150, 239.2.1.151 at UDP ports 7148,7149",
		"ExternallyReachable: senders on the data network send to groups 239.2.1.150, 239.2.1.151 at UDP ports 7148,7149 (Host mode"} {
		if !strings.Contains(all, want) {
			t.Errorf("conditions lack %q:\n%s", want, all)
		}
	}
}

// status.running of a packet capture says its protocol and network (Host read from the
// pod: its arguments have no --listen-on), and no RDMA transport or handshake port; a
// spec change names the protocol.
func TestRunningConfigPacket(t *testing.T) {
	rc := vdifCapture("v")
	rc.Spec.Network.Mode = ringcapv1.NetworkModeHost
	run := RunningConfig(BuildPod(rc, DefaultPodOptions()), nil)
	if run.Protocol != "VDIF" || run.Network != "Host" || run.Transport != "" || run.TransportSource != "" || run.Port != 0 {
		t.Errorf("running %+v: want VDIF in Host mode, no transport, no handshake port", run)
	}
	if rdma := RunningConfig(BuildPod(defaulted("r"), DefaultPodOptions()), nil); rdma.Protocol != "" || rdma.Transport != "Verbs" {
		t.Errorf("RDMA running %+v: want no protocol, transport Verbs", rdma)
	}
	rc.Generation = 2
	if msg := pendingChange(rc, run); !strings.Contains(msg, "changes;") {
		t.Errorf("pending change of a spec whose run config is the same: %q", msg)
	}
	next := speadCapture("v")
	next.Generation = 2
	if msg := pendingChange(next, run); !strings.Contains(msg, "receiver protocol VDIF -> SPEAD") {
		t.Errorf("pending change VDIF to SPEAD: %q", msg)
	}
}
