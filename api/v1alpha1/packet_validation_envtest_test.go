//go:build envtest

package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// speadOK is a SPEAD receiver section that the API accepts, for cases that change one thing.
const speadOK = `spead: {timestampItem: 0x1600, timestampStep: 2097152, syncTime: 1700000000, sampleRate: 1712000000}`

// Packet captures (SPEAD, VDIF) that can never work are refused at apply time, with the
// field and the reason.
func TestPacketRingCapturesRejected(t *testing.T) {
	tests := []struct {
		name, spec string
		want       []string
	}{
		{"SPEAD without udp", `{receiver: {protocol: SPEAD, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.udp", "required when receiver.protocol is SPEAD or VDIF"}},
		{"SPEAD without spead", `{receiver: {protocol: SPEAD, udp: {ports: [7148]}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.spead", "required when receiver.protocol is SPEAD"}},
		{"VDIF without vdif", `{receiver: {protocol: VDIF, udp: {ports: [7148]}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.vdif", "required when receiver.protocol is VDIF"}},
		{"udp with RDMA", `{receiver: {udp: {ports: [7148]}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.udp", "and only then"}},
		{"spead with VDIF", `{receiver: {protocol: VDIF, udp: {ports: [7148]}, vdif: {framesPerSecond: 25600}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.spead", "and only then"}},
		{"vdif with RDMA", `{receiver: {vdif: {framesPerSecond: 25600}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.vdif", "and only then"}},
		{"no ports", `{receiver: {protocol: SPEAD, udp: {ports: []}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.udp.ports", "at least 1 items"}},
		{"port 0", `{receiver: {protocol: SPEAD, udp: {ports: [0]}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.udp.ports[0]", "greater than or equal to 1"}},
		{"port 65536", `{receiver: {protocol: SPEAD, udp: {ports: [7148, 65536]}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.udp.ports[1]", "less than or equal to 65535"}},
		{"idle timeout in days", `{receiver: {protocol: SPEAD, udp: {ports: [7148], idleTimeout: 1d}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.udp.idleTimeout", "must be a duration such as 10s"}},
		{"idle timeout zero", `{receiver: {protocol: SPEAD, udp: {ports: [7148], idleTimeout: 0s}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.udp.idleTimeout", "must be positive"}},
		{"negative stop heaps", `{receiver: {protocol: SPEAD, udp: {ports: [7148]}, spead: {timestampItem: 0x1600, timestampStep: 2097152, syncTime: 1700000000, sampleRate: 1712000000, stopHeaps: -1}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.spead.stopHeaps", "greater than or equal to 0"}},
		{"cpus not a list", `{receiver: {protocol: SPEAD, udp: {ports: [7148], cpus: "2;3"}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.udp.cpus", "must be auto or a CPU list"}},
		{"cpus range backwards", `{receiver: {protocol: SPEAD, udp: {ports: [7148], cpus: "0,5-2"}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.udp.cpus", "a range runs upwards"}},
		{"cpu beyond 1023", `{receiver: {protocol: SPEAD, udp: {ports: [7148], cpus: "1024"}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.udp.cpus", "at most 1023"}},
		{"port twice", `{receiver: {protocol: SPEAD, udp: {ports: [7148, 7148]}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.udp.ports[1]", "Duplicate value"}},
		{"unicast group", `{receiver: {protocol: SPEAD, udp: {ports: [7148], multicastGroups: [10.1.0.7]}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.udp.multicastGroups", "IPv4 multicast addresses"}},
		{"group not an address", `{receiver: {protocol: SPEAD, udp: {ports: [7148], multicastGroups: [239.2.1]}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.udp.multicastGroups", "IPv4 multicast addresses"}},
		{"IPv6 group", `{receiver: {protocol: SPEAD, udp: {ports: [7148], multicastGroups: ["ff02::1"]}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.udp.multicastGroups", "IPv4 multicast addresses"}},
		{"group twice", `{receiver: {protocol: SPEAD, udp: {ports: [7148], multicastGroups: [239.2.1.150, 239.2.1.150]}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.udp.multicastGroups[1]", "Duplicate value"}},
		{"bad bind address", `{receiver: {protocol: SPEAD, udp: {ports: [7148], address: 10.1.0.300}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.udp.address", "must be an IP address"}},
		{"reorder window beyond the ring", `{ring: {blocks: 4}, receiver: {protocol: SPEAD, udp: {ports: [7148], reorderBlocks: 5}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.udp.reorderBlocks", "must not exceed spec.ring.blocks"}},
		{"presence granule without a presence key", `{receiver: {protocol: SPEAD, udp: {ports: [7148], presenceGranuleBytes: 8192}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.udp.presenceGranuleBytes", "needs presenceKey"}},
		{"presence granule 0", `{receiver: {protocol: SPEAD, udp: {ports: [7148], presenceKey: eada, presenceGranuleBytes: 0}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.udp.presenceGranuleBytes", "greater than or equal to 1"}},
		{"presence granule beyond the block", `{ring: {blockBytes: 8192}, receiver: {protocol: VDIF, udp: {ports: [2630], presenceKey: eada, presenceGranuleBytes: 16384}, vdif: {framesPerSecond: 25600}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.udp.presenceGranuleBytes", "must not exceed spec.ring.blockBytes"}},
		{"low port in Host mode", `{network: {mode: Host}, receiver: {protocol: VDIF, udp: {ports: [7148, 900]}, vdif: {framesPerSecond: 25600}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.udp.ports", "at least 1024 when spec.network.mode is Host"}},
		{"SPEAD with a device class", `{receiver: {protocol: SPEAD, deviceClassName: ringcap-rdma, udp: {ports: [7148]}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.protocol", "takes no RDMA device"}},
		{"VDIF requesting the RDMA resource", `{receiver: {protocol: VDIF, resources: {limits: {ringcap.io/rdma: "1"}}, udp: {ports: [7148]}, vdif: {framesPerSecond: 25600}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.protocol", "takes no RDMA device"}},
		{"VDIF with another resource name", `{receiver: {protocol: VDIF, resourceName: example.com/roce, udp: {ports: [7148]}, vdif: {framesPerSecond: 25600}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.protocol", "takes no RDMA device"}},
		{"SPEAD over OFI", `{receiver: {protocol: SPEAD, transport: OFI, udp: {ports: [7148]}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.protocol", "are RDMA settings"}},
		{"SPEAD with busyPoll", `{receiver: {protocol: SPEAD, busyPoll: true, udp: {ports: [7148]}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.protocol", "are RDMA settings"}},
		{"SPEAD with a GID index", `{receiver: {protocol: SPEAD, gidIndex: 1, udp: {ports: [7148]}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.protocol", "are RDMA settings"}},
		{"SPEAD without a timestamp item", `{receiver: {protocol: SPEAD, udp: {ports: [7148]}, spead: {timestampStep: 1, syncTime: 1, sampleRate: 1}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.spead.timestampItem", "Required value"}},
		{"SPEAD timestamp on the heap size item", `{receiver: {protocol: SPEAD, udp: {ports: [7148]}, spead: {timestampItem: 0x2, timestampStep: 1, syncTime: 1, sampleRate: 1}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.spead.timestampItem", "standard item other than the heap counter"}},
		{"SPEAD timestamp step 0", `{receiver: {protocol: SPEAD, udp: {ports: [7148]}, spead: {timestampItem: 0x1600, timestampStep: 0, syncTime: 1, sampleRate: 1}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.spead.timestampStep", "greater than or equal to 1"}},
		{"SPEAD channel item without channels", `{receiver: {protocol: SPEAD, udp: {ports: [7148]}, spead: {timestampItem: 0x1600, timestampStep: 1, channelItem: 0x4103, syncTime: 1, sampleRate: 1}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.spead.channels", "go together"}},
		{"SPEAD no channels", `{receiver: {protocol: SPEAD, udp: {ports: [7148]}, spead: {timestampItem: 0x1600, timestampStep: 1, channelItem: 0x4103, channels: {count: 0}, syncTime: 1, sampleRate: 1}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.spead.channels.count", "greater than or equal to 1"}},
		{"SPEAD channel item is the timestamp", `{receiver: {protocol: SPEAD, udp: {ports: [7148]}, spead: {timestampItem: 0x1600, timestampStep: 1, channelItem: 0x1600, channels: {count: 4}, syncTime: 1, sampleRate: 1}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.spead.channelItem", "must differ from timestampItem"}},
		{"SPEAD no sync time", `{receiver: {protocol: SPEAD, udp: {ports: [7148]}, spead: {timestampItem: 0x1600, timestampStep: 1, sampleRate: 1}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.spead.syncTime", "exactly one of syncTime"}},
		{"SPEAD two sample rates", `{receiver: {protocol: SPEAD, udp: {ports: [7148]}, spead: {timestampItem: 0x1600, timestampStep: 1, syncTime: 1, sampleRate: 1, sampleRateItem: 0x1027}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.spead.sampleRate", "exactly one of sampleRate"}},
		{"VDIF no frame rate", `{receiver: {protocol: VDIF, udp: {ports: [7148]}, vdif: {threads: [0, 1]}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.vdif.framesPerSecond", "Required value"}},
		{"VDIF thread twice", `{receiver: {protocol: VDIF, udp: {ports: [7148]}, vdif: {framesPerSecond: 25600, threads: [0, 1, 0]}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.vdif.threads[2]", "Duplicate value"}},
		{"VDIF thread beyond 10 bits", `{receiver: {protocol: VDIF, udp: {ports: [7148]}, vdif: {framesPerSecond: 25600, threads: [1024]}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.vdif.threads[0]", "less than or equal to 1023"}},
		{"VDIF payload not a multiple of 8", `{receiver: {protocol: VDIF, udp: {ports: [7148]}, vdif: {framesPerSecond: 25600, payloadBytes: 8004}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.vdif.payloadBytes", "multiple of 8"}},
		{"VDIF start not RFC 3339", `{receiver: {protocol: VDIF, udp: {ports: [7148]}, vdif: {framesPerSecond: 25600, start: "2026-11-28 13:45"}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.vdif.start", "date-time"}},
		{"SPEAD stopping after observations", `{receiver: {protocol: SPEAD, stop: {after: Observations, observations: 1}, udp: {ports: [7148]}, ` + speadOK + `}, readers: [{name: r}]}`,
			[]string{"spec.receiver.stop", "a SPEAD or VDIF capture is one observation"}},
		{"unknown protocol", `{receiver: {protocol: TCP}, readers: [{name: r}]}`,
			[]string{"spec.receiver.protocol", "Unsupported value"}},
	}
	ctx := context.Background()
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(t, fmt.Sprintf("packet-invalid-%d", i), tc.spec)
			err := env.Client.Create(ctx, obj)
			if err == nil {
				_ = env.Client.Delete(ctx, obj)
				t.Fatalf("spec %s was accepted", tc.spec)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("spec %s: want an Invalid error, got %v", tc.spec, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("spec %s: error does not mention %q:\n%v", tc.spec, w, err)
				}
			}
		})
	}
}

// Packet captures that can work are accepted, in every network mode; the RDMA-only
// messageBytes rule does not apply to them.
func TestPacketRingCapturesAccepted(t *testing.T) {
	ctx := context.Background()
	for i, spec := range []string{
		`{receiver: {protocol: SPEAD, udp: {ports: [7148]}, ` + speadOK + `}, readers: [{name: r}]}`,
		`{ring: {blockBytes: 12288, blocks: 8}, receiver: {protocol: SPEAD, udp: {ports: [7148, 7149], multicastGroups: [239.2.1.150, 239.2.1.151], interface: eth1, socketsPerPort: 4, cpus: "2-5,7", bufferBytes: 268435456, reorderBlocks: 8},
		  spead: {timestampItem: 0x1600, timestampStep: 2097152, channelItem: 0x4103, channels: {first: 0, step: 256, count: 16}, heapBytes: 262144, syncTimeItem: 0x1027, sampleRateItem: 0x1046, startTimestamp: 0}}, readers: [{name: r}]}`,
		`{network: {mode: Host}, receiver: {protocol: SPEAD, udp: {ports: [7148], address: 10.8.0.7, multicastGroups: [224.0.0.1, 239.255.255.255]}, spead: {timestampItem: 0x1, timestampStep: 1, syncTime: 1700000000, sampleRate: 1712000000}}, readers: [{name: r}]}`,
		`{network: {mode: Attachment, attachment: data/macvlan-conf, interface: net1}, receiver: {protocol: VDIF, udp: {ports: [2630]}, vdif: {framesPerSecond: 25600, threads: [0, 1, 2, 3], payloadBytes: 8000, start: "2026-11-28T13:45:00Z"}}, readers: [{name: r}]}`,
		`{network: {mode: Host}, receiver: {protocol: VDIF, port: 20515, metricsPort: 20100, udp: {ports: [2630], cpus: auto}, vdif: {framesPerSecond: 1}}, ring: {hostIPC: true}}`,
		`{ring: {blockBytes: 8192}, receiver: {protocol: SPEAD, udp: {ports: [7148], presenceKey: eada, presenceGranuleBytes: 8192}, ` + speadOK + `}, readers: [{name: r}]}`,
		`{receiver: {protocol: RDMA}, readers: [{name: r}]}`,
	} {
		obj := object(t, fmt.Sprintf("packet-valid-%d", i), spec)
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Errorf("valid spec %s rejected: %v", spec, err)
		}
	}
}

// protocol defaults to RDMA; a packet capture's udp section gets its defaults.
func TestPacketDefaultsApplied(t *testing.T) {
	ctx := context.Background()
	obj := object(t, "packet-defaults", `{receiver: {protocol: SPEAD, udp: {ports: [7148]}, spead: {timestampItem: 0x1600, timestampStep: 1, channelItem: 0x4103, channels: {count: 2}, syncTime: 1, sampleRate: 1}}, readers: [{name: r}]}`)
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	var rc ringcapv1.RingCapture
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), &rc); err != nil {
		t.Fatal(err)
	}
	u := rc.Spec.Receiver.UDP
	if u.SocketsPerPort != 1 || u.BufferBytes != 64<<20 || u.ReorderBlocks != 4 {
		t.Errorf("udp defaults socketsPerPort %d bufferBytes %d reorderBlocks %d, want 1, 64 MiB and 4", u.SocketsPerPort, u.BufferBytes, u.ReorderBlocks)
	}
	if s := rc.Spec.Receiver.SPEAD; s.TimestampItem != 0x1600 || s.Channels.Step != 1 {
		t.Errorf("spead timestampItem %#x channels.step %d, want 0x1600 (YAML hex) and 1", s.TimestampItem, s.Channels.Step)
	}
	obj = object(t, "packet-defaults-rdma", `{readers: [{name: r}]}`)
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), &rc); err != nil {
		t.Fatal(err)
	}
	if rc.Spec.Receiver.Protocol != ringcapv1.ProtocolRDMA {
		t.Errorf("default receiver.protocol %q, want RDMA", rc.Spec.Receiver.Protocol)
	}
}

// `kubectl get rcap -o wide` shows a packet capture's loss (status.packets.loss).
func TestPacketLossWideColumn(t *testing.T) {
	ctx := context.Background()
	obj := object(t, "packet-wide", `{receiver: {protocol: VDIF, udp: {ports: [2630]}, vdif: {framesPerSecond: 25600}}, readers: [{name: r}]}`)
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	var rc ringcapv1.RingCapture
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), &rc); err != nil {
		t.Fatal(err)
	}
	rc.Status.Packets = &ringcapv1.PacketStatus{Protocol: "vdif", Packets: 10000, ReceivedPackets: 9998, Late: 2, Loss: "0.02%"}
	if err := env.Client.Status().Update(ctx, &rc); err != nil {
		t.Fatal(err)
	}
	if got := tableCells(ctx, t, "packet-wide")["Loss"]; got != "0.02%" {
		t.Errorf("column Loss = %q, want 0.02%%", got)
	}
}
