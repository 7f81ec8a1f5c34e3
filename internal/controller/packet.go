package controller

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

// A packet capture (receiver.protocol SPEAD or VDIF) takes UDP packets from
// digitisers: no RDMA device (no extended resource, no claim), no queue pairs, and its
// UDP ports declared on the receiver container (host ports in Host mode, as the TCP
// ones). Its counters reach status.packets from the receiver's /status.

// udpPortPrefix names the receiver's UDP container ports: udp-<port>.
const udpPortPrefix = "udp-"

// packetArgs are a packet receiver's protocol, listen address, UDP sockets and
// placement rule (`ringcap recv --protocol spead|vdif`).
func packetArgs(rc *ringcapv1.RingCapture) []string {
	rx := rc.Spec.Receiver
	args := []string{"--protocol", strings.ToLower(string(rx.Protocol))}
	args = append(args, packetListenArgs(rc)...)
	if rx.UDP != nil {
		args = append(args, udpArgs(*rx.UDP)...)
	}
	switch {
	case rx.Protocol == ringcapv1.ProtocolSPEAD && rx.SPEAD != nil:
		args = append(args, speadArgs(*rx.SPEAD)...)
	case rx.Protocol == ringcapv1.ProtocolVDIF && rx.VDIF != nil:
		args = append(args, vdifArgs(*rx.VDIF)...)
	}
	return args
}

// packetListenArgs are the listen address a packet receiver binds its UDP sockets to
// when udp.address is not given: every address of the pod (Pod mode) or of the node
// (Host mode: without an RDMA device there is no GID netdev to pick), the attachment's
// in Attachment mode. The allowlist is the spec's, else what the mode allows.
func packetListenArgs(rc *ringcapv1.RingCapture) []string {
	if networkMode(rc) != ringcapv1.NetworkModeHost {
		return listenArgs(rc)
	}
	args := []string{"--listen", ":" + strconv.Itoa(int(rc.Spec.Receiver.Port))}
	if len(rc.Spec.Network.AllowedSenders) > 0 {
		args = append(args, "--allowed-senders", allowedSendersArg(rc)) // listen-subnet needs one address
	}
	return args
}

// udpArgs are the UDP sockets: ports, bind address, multicast groups, sockets per
// port and their threads' CPUs, buffer and reorder window (zero values leave the
// receiver's defaults), and the presence ring with its granule.
func udpArgs(u ringcapv1.UDPSpec) []string {
	args := []string{"--udp-ports", joinInts(u.Ports)}
	if u.Address != "" {
		args = append(args, "--udp-address", u.Address)
	}
	if len(u.MulticastGroups) > 0 {
		args = append(args, "--multicast", strings.Join(u.MulticastGroups, ","))
	}
	if u.Interface != "" {
		args = append(args, "--multicast-interface", u.Interface)
	}
	if u.SocketsPerPort > 0 {
		args = append(args, "--udp-sockets", i64(int64(u.SocketsPerPort)))
	}
	if u.CPUs != "" {
		args = append(args, "--udp-cpus", u.CPUs)
	}
	if u.BufferBytes > 0 {
		args = append(args, "--udp-buffer", i64(u.BufferBytes))
	}
	if u.ReorderBlocks > 0 {
		args = append(args, "--reorder-blocks", i64(int64(u.ReorderBlocks)))
	}
	if u.IdleTimeout != nil {
		args = append(args, "--udp-idle-timeout", u.IdleTimeout.Duration.String())
	}
	if u.PresenceKey != "" {
		args = append(args, "--presence-key", NormalizeKey(u.PresenceKey))
		if u.PresenceGranuleBytes != nil {
			args = append(args, "--presence-granule", i64(*u.PresenceGranuleBytes))
		}
	}
	return args
}

// speadArgs are the SPEAD placement rule and time reference; item IDs in hex, as SPEAD
// documents them.
func speadArgs(s ringcapv1.SPEADSpec) []string {
	args := []string{"--spead-timestamp-id", hexID(s.TimestampItem), "--spead-timestamp-step", i64(s.TimestampStep)}
	if s.ChannelItem != nil && s.Channels != nil {
		c := s.Channels
		args = append(args, "--spead-channel-id", hexID(*s.ChannelItem),
			"--spead-channels", fmt.Sprintf("%d:%d:%d", c.First, max(c.Step, 1), c.Count))
	}
	if s.HeapBytes != nil {
		args = append(args, "--spead-heap-bytes", i64(*s.HeapBytes))
	}
	if s.SyncTime != nil {
		args = append(args, "--spead-sync-time", i64(*s.SyncTime))
	} else if s.SyncTimeItem != nil {
		args = append(args, "--spead-sync-time-id", hexID(*s.SyncTimeItem))
	}
	if s.SampleRate != nil {
		args = append(args, "--spead-sample-rate", i64(*s.SampleRate))
	} else if s.SampleRateItem != nil {
		args = append(args, "--spead-sample-rate-id", hexID(*s.SampleRateItem))
	}
	if s.StartTimestamp != nil && *s.StartTimestamp > 0 {
		args = append(args, "--spead-start-timestamp", i64(*s.StartTimestamp))
	}
	if s.StopHeaps != nil {
		args = append(args, "--spead-stop-heaps", i64(int64(*s.StopHeaps)))
	}
	return args
}

// vdifArgs are the VDIF placement rule and start.
func vdifArgs(v ringcapv1.VDIFSpec) []string {
	args := []string{"--vdif-frames-per-second", i64(int64(v.FramesPerSecond))}
	if len(v.Threads) > 0 {
		args = append(args, "--vdif-threads", joinInts(v.Threads))
	}
	if v.PayloadBytes != nil {
		args = append(args, "--vdif-payload-bytes", i64(int64(*v.PayloadBytes)))
	}
	if v.Start != "" {
		args = append(args, "--vdif-start", v.Start)
	}
	return args
}

// protocolName turns the CLI's --protocol ("spead") into the API's ("SPEAD"); "" for
// a receiver without it, which runs RDMA (status.running shows its transport).
func protocolName(p string) string {
	switch strings.ToLower(p) {
	case "":
		return ""
	case "rdma":
		return string(ringcapv1.ProtocolRDMA)
	case "spead":
		return string(ringcapv1.ProtocolSPEAD)
	case "vdif":
		return string(ringcapv1.ProtocolVDIF)
	}
	return p
}

// isPacketRun says whether a running configuration is a SPEAD or VDIF receiver's.
func isPacketRun(run *ringcapv1.RunningStatus) bool {
	return ringcapv1.ReceiverProtocol(run.Protocol).IsPacket()
}

func hexID(id int32) string { return "0x" + strconv.FormatInt(int64(id), 16) }

func joinInts(ns []int32) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(int(n))
	}
	return strings.Join(s, ",")
}

// receiverPorts are the receiver container's ports: the TCP handshake (RDMA) or the
// UDP ports (SPEAD, VDIF), and the metrics port.
func receiverPorts(rx ringcapv1.ReceiverSpec) []corev1.ContainerPort {
	metrics := corev1.ContainerPort{Name: "metrics", ContainerPort: rx.MetricsPort, Protocol: corev1.ProtocolTCP}
	if !rx.Protocol.IsPacket() {
		return []corev1.ContainerPort{
			{Name: "handshake", ContainerPort: rx.Port, Protocol: corev1.ProtocolTCP},
			metrics,
		}
	}
	var ports []corev1.ContainerPort
	if rx.UDP != nil {
		for _, p := range rx.UDP.Ports {
			ports = append(ports, corev1.ContainerPort{Name: udpPortPrefix + strconv.Itoa(int(p)), ContainerPort: p, Protocol: corev1.ProtocolUDP})
		}
	}
	return append(ports, metrics)
}

// podUDPPorts are the UDP ports of the pod's receiver container (nil for an RDMA
// capture).
func podUDPPorts(pod *corev1.Pod) []int32 {
	var ports []int32
	for _, c := range pod.Spec.Containers {
		if c.Name != ringcapv1.ReceiverContainerName {
			continue
		}
		for _, p := range c.Ports {
			if p.Protocol == corev1.ProtocolUDP {
				ports = append(ports, p.ContainerPort)
			}
		}
	}
	return ports
}

// PacketsStatus is status.packets from the receiver's /status "packets" section (nil
// without one), with the loss for display.
func PacketsStatus(p *statusdoc.Packets) *ringcapv1.PacketStatus {
	if p == nil {
		return nil
	}
	return &ringcapv1.PacketStatus{
		Protocol: p.Protocol, Packets: apiInt64(p.Packets), ReceivedPackets: apiInt64(p.ReceivedPackets),
		ReceivedBytes: apiInt64(p.ReceivedBytes), Late: apiInt64(p.Late), OutOfWindow: apiInt64(p.OutOfWindow),
		Duplicate: apiInt64(p.Duplicate), Malformed: apiInt64(p.Malformed), Invalid: apiInt64(p.Invalid),
		OutOfRange: apiInt64(p.OutOfRange), BeforeStart: apiInt64(p.BeforeStart), Control: apiInt64(p.Control),
		KernelDrops: apiInt64(p.KernelDrops), Truncated: apiInt64(p.Truncated), Refused: apiInt64(p.Refused),
		ZeroFilledBytes: apiInt64(p.ZeroFilledBytes), Blocks: apiInt64(p.Blocks),
		Loss: PacketLoss(p),
	}
}

// PacketLoss is the share of packets lost, as a percent for people: late, out of
// window, duplicate, malformed, invalid, out of range and dropped by the kernel, of
// the packets the sockets delivered plus those the kernel dropped. "" before the first
// packet; "<0.01%" for a loss too small for two decimals, so that a loss never shows
// as 0.
func PacketLoss(p *statusdoc.Packets) string {
	lost := p.Late + p.OutOfWindow + p.Duplicate + p.Malformed + p.Invalid + p.OutOfRange + p.KernelDrops
	total := p.Packets + p.KernelDrops
	switch {
	case total == 0:
		return ""
	case lost == 0:
		return "0%"
	}
	pct := 100 * float64(lost) / float64(total)
	if pct < 0.01 {
		return "<0.01%"
	}
	return strconv.FormatFloat(pct, 'f', 2, 64) + "%"
}
