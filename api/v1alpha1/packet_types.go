package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ReceiverProtocol is what the receiver takes in: RDMA from a ringcap sender, or UDP
// packets (SPEAD or VDIF) from digitisers and beamformers.
// +kubebuilder:validation:Enum=RDMA;SPEAD;VDIF
type ReceiverProtocol string

const (
	// ProtocolRDMA is ringcap's own RDMA transfer (queue pairs from `ringcap send`).
	ProtocolRDMA ReceiverProtocol = "RDMA"
	// ProtocolSPEAD is SPEAD version 4 over UDP (spead2, MeerKAT-style F-engines).
	ProtocolSPEAD ReceiverProtocol = "SPEAD"
	// ProtocolVDIF is VDIF frames over UDP (VLBI and pulsar back-ends).
	ProtocolVDIF ReceiverProtocol = "VDIF"
)

// IsPacket says whether the protocol is a UDP packet protocol (SPEAD or VDIF), which
// needs no RDMA device.
func (p ReceiverProtocol) IsPacket() bool { return p == ProtocolSPEAD || p == ProtocolVDIF }

// UDPSpec is where a packet receiver takes its UDP packets.
// +kubebuilder:validation:XValidation:rule="!has(self.presenceGranuleBytes) || has(self.presenceKey)",message="receiver.udp.presenceGranuleBytes needs presenceKey: it sizes the records of the presence ring",fieldPath=".presenceGranuleBytes"
type UDPSpec struct {
	// ports are the UDP ports the receiver takes packets on (`--udp-ports`), one or
	// more, each once.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=65535
	// +required
	Ports []int32 `json:"ports"`

	// address is the IP address the sockets bind to (`--udp-address`); by default the
	// address the receiver listens on for the network mode (every address of the pod
	// in Pod mode, of the node in Host mode, the attachment's in Attachment mode). With
	// multicastGroups the sockets bind the wildcard and address names the interface.
	// +kubebuilder:validation:MaxLength=45
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="receiver.udp.address must be an IP address such as 10.1.0.7"
	// +optional
	Address string `json:"address,omitempty"`

	// multicastGroups are IPv4 multicast groups (224.0.0.0/4) the receiver joins on
	// interface (`--multicast`), each once.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=15
	// +kubebuilder:validation:XValidation:rule="self.all(g, isIP(g) && ip(g).family() == 4 && cidr('224.0.0.0/4').containsIP(g))",message="receiver.udp.multicastGroups entries must be IPv4 multicast addresses (224.0.0.0 to 239.255.255.255), such as 239.2.1.150"
	// +optional
	MulticastGroups []string `json:"multicastGroups,omitempty"`

	// interface is the network interface the groups are joined on
	// (`--multicast-interface`); by default the one holding address.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.:@-]+$`
	// +optional
	Interface string `json:"interface,omitempty"`

	// socketsPerPort is the number of sockets (SO_REUSEPORT), each with its own
	// receive thread, per port (`--udp-sockets`).
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	SocketsPerPort int32 `json:"socketsPerPort,omitempty"`

	// cpus pins the receive threads, one to each CPU in turn, socket by socket and port
	// by port (`--udp-cpus`): "auto" for the CPUs the receiver's container may run on
	// (with the kubelet's static CPU manager policy and whole CPUs requested, the pod's
	// exclusive CPUs), or a CPU list such as "2,3" or "2-5" on a node whose CPUs you know.
	// A CPU listed twice takes two threads. Unset: the threads are not pinned.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self == 'auto' || self.matches('^[0-9]{1,4}(-[0-9]{1,4})?(,[0-9]{1,4}(-[0-9]{1,4})?)*$')",message="receiver.udp.cpus must be auto or a CPU list such as 2,3 or 2-5"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[0-9]{1,4}(-[0-9]{1,4})?(,[0-9]{1,4}(-[0-9]{1,4})?)*$') || self.split(',').all(r, r.split('-').all(n, int(n) <= 1023) && (!r.contains('-') || int(r.split('-')[0]) <= int(r.split('-')[1])))",message="receiver.udp.cpus: CPU numbers are at most 1023 and a range runs upwards, such as 2-5"
	// +optional
	CPUs string `json:"cpus,omitempty"`

	// bufferBytes is each socket's receive buffer, SO_RCVBUF (`--udp-buffer`); the
	// receiver says when the node's net.core.rmem_max is lower.
	// +kubebuilder:default=67108864
	// +kubebuilder:validation:Minimum=65536
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	BufferBytes int64 `json:"bufferBytes,omitempty"`

	// reorderBlocks is the reorder window in ring blocks (`--reorder-blocks`): late
	// packets inside it land in place, packets behind it are counted as late. At most
	// ring.blocks.
	// +kubebuilder:default=4
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	// +optional
	ReorderBlocks int32 `json:"reorderBlocks,omitempty"`

	// idleTimeout ends the observation once no packet has arrived for this long after
	// the first (`--udp-idle-timeout`), a Go duration such as "10s"; the blocks still
	// open are handed over, their gaps zero-filled. Unset: never. A VDIF stream has no
	// end marker: without this or a stop condition its capture runs until deleted.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$')",message="receiver.udp.idleTimeout must be a duration such as 10s or 2m (units ns, us, ms, s, m and h)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self) > duration('0s')",message="receiver.udp.idleTimeout must be positive"
	// +optional
	IdleTimeout *metav1.Duration `json:"idleTimeout,omitempty"`

	// presenceKey is the SysV key, in hex as ring.key, of the presence ring the receiver
	// writes beside the data ring (`--presence-key`): one record per data block saying
	// which granules of it packets carried and which were zero-filled (docs/packet-ingest.md,
	// "Presence record"). It is made and destroyed with the data ring and has ring.readers
	// reader slots, which the receiver waits for as for the data ring's: every reader
	// must read it too (`ringcap ring read -k KEY --presence`). It must differ from
	// ring.key, and neither key may be the other's header ring (key+1). Unset: no
	// presence ring.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=10
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0[xX])?[0-9a-fA-F]{1,8}$')",message="receiver.udp.presenceKey must be a hex SysV key such as eada or 0xeada"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^(0[xX])?0+$')",message="receiver.udp.presenceKey must not be 0 (IPC_PRIVATE)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^(0[xX])?[89a-fA-F][0-9a-fA-F]{7}$')",message="receiver.udp.presenceKey must be at most 0x7fffffff"
	// +optional
	PresenceKey string `json:"presenceKey,omitempty"`

	// presenceGranuleBytes is the bytes each bit of a presence record stands for
	// (`--presence-granule`), best the packet payload (a SPEAD packet's payload, a VDIF
	// frame's data array) dividing ring.blockBytes, so that a lost packet clears exactly
	// its granule. Only with presenceKey; at most ring.blockBytes. By default
	// vdif.payloadBytes when given, else 8192.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4294967296
	// +optional
	PresenceGranuleBytes *int64 `json:"presenceGranuleBytes,omitempty"`
}

// SPEADSpec is the placement rule and time reference of a SPEAD stream. Item IDs are
// numbers: YAML reads an unquoted 0x1600 as the number 5632, so IDs may be written in
// hex as SPEAD documents them.
//
// +kubebuilder:validation:XValidation:rule="has(self.channelItem) == has(self.channels)",message="receiver.spead.channelItem and receiver.spead.channels go together: the channel item names each heap's channel group, channels its range",fieldPath=".channels"
// +kubebuilder:validation:XValidation:rule="!has(self.channelItem) || self.channelItem != self.timestampItem",message="receiver.spead.channelItem must differ from timestampItem",fieldPath=".channelItem"
// +kubebuilder:validation:XValidation:rule="has(self.syncTime) != has(self.syncTimeItem)",message="receiver.spead: set exactly one of syncTime (Unix seconds of timestamp 0) and syncTimeItem (the immediate item that carries it)",fieldPath=".syncTime"
// +kubebuilder:validation:XValidation:rule="has(self.sampleRate) != has(self.sampleRateItem)",message="receiver.spead: set exactly one of sampleRate (timestamp units per second, Hz) and sampleRateItem (the immediate item that carries it)",fieldPath=".sampleRate"
type SPEADSpec struct {
	// timestampItem is the immediate item whose value orders the heaps, for example
	// an ADC sample count (`--spead-timestamp-id`); 0x1, the heap counter, places by
	// heap counter. Not one of the other standard items 0x2 to 0x4.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=8388607
	// +kubebuilder:validation:XValidation:rule="self < 2 || self > 4",message="receiver.spead.timestampItem must not be a standard item other than the heap counter (0x2 heap size, 0x3 heap offset, 0x4 payload length)"
	// +required
	TimestampItem int32 `json:"timestampItem"`

	// timestampStep is the timestamp increment between consecutive heaps of one
	// channel group (`--spead-timestamp-step`).
	// +kubebuilder:validation:Minimum=1
	// +required
	TimestampStep int64 `json:"timestampStep"`

	// channelItem is the immediate item naming a heap's channel group
	// (`--spead-channel-id`); unset when the stream has one group.
	// +kubebuilder:validation:Minimum=5
	// +kubebuilder:validation:Maximum=8388607
	// +optional
	ChannelItem *int32 `json:"channelItem,omitempty"`

	// channels is channelItem's range: first value, step and count
	// (`--spead-channels FIRST:STEP:COUNT`).
	// +optional
	Channels *SPEADChannels `json:"channels,omitempty"`

	// heapBytes is every heap's payload size (`--spead-heap-bytes`); by default the
	// first packet's heap size item.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1073741824
	// +optional
	HeapBytes *int64 `json:"heapBytes,omitempty"`

	// syncTime is the Unix time, in seconds, of timestamp 0 (`--spead-sync-time`).
	// +kubebuilder:validation:Minimum=1
	// +optional
	SyncTime *int64 `json:"syncTime,omitempty"`

	// syncTimeItem is the immediate item carrying the sync time
	// (`--spead-sync-time-id`).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=8388607
	// +optional
	SyncTimeItem *int32 `json:"syncTimeItem,omitempty"`

	// sampleRate is the timestamp units per second, the ADC sample rate in Hz
	// (`--spead-sample-rate`), for example 1712000000.
	// +kubebuilder:validation:Minimum=1
	// +optional
	SampleRate *int64 `json:"sampleRate,omitempty"`

	// sampleRateItem is the immediate item carrying the sample rate
	// (`--spead-sample-rate-id`).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=8388607
	// +optional
	SampleRateItem *int32 `json:"sampleRateItem,omitempty"`

	// startTimestamp is the timestamp the observation starts at
	// (`--spead-start-timestamp`); heaps before it are counted, not written. Unset or
	// 0: start at the first packet.
	// +kubebuilder:validation:Minimum=0
	// +optional
	StartTimestamp *int64 `json:"startTimestamp,omitempty"`

	// stopHeaps ends the observation after this many stream-stop heaps (stream control
	// item 0x6 = 2, which spead2's senders and `ringcap send` send when their stream
	// ends; `--spead-stop-heaps`): one per sender that must end first. 0: they are
	// counted, not obeyed.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65536
	// +optional
	StopHeaps *int32 `json:"stopHeaps,omitempty"`
}

// SPEADChannels is the range of a SPEAD channel item: count values first, first+step, ...
type SPEADChannels struct {
	// first is the item's first value.
	// +kubebuilder:validation:Minimum=0
	// +optional
	First int64 `json:"first,omitempty"`
	// step is the difference between consecutive values.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +optional
	Step int64 `json:"step,omitempty"`
	// count is the number of channel groups.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	// +required
	Count int32 `json:"count"`
}

// VDIFSpec is the placement rule and start of a VDIF stream.
type VDIFSpec struct {
	// framesPerSecond is each thread's frames per second (`--vdif-frames-per-second`);
	// the frame number is 24 bits.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16777215
	// +required
	FramesPerSecond int32 `json:"framesPerSecond"`

	// threads are the thread IDs in the order their frames are placed
	// (`--vdif-threads`), each once; by default one thread, the first that appears.
	// +listType=set
	// +kubebuilder:validation:MaxItems=1024
	// +kubebuilder:validation:items:Minimum=0
	// +kubebuilder:validation:items:Maximum=1023
	// +optional
	Threads []int32 `json:"threads,omitempty"`

	// payloadBytes is each frame's data array in bytes, the frame less its header
	// (`--vdif-payload-bytes`), a multiple of 8; by default the first frame's.
	// +kubebuilder:validation:Minimum=8
	// +kubebuilder:validation:Maximum=134217728
	// +kubebuilder:validation:MultipleOf=8
	// +optional
	PayloadBytes *int32 `json:"payloadBytes,omitempty"`

	// start is the time the observation starts, RFC 3339 such as 2026-11-28T13:45:00Z
	// (`--vdif-start`); frames before it are counted, not written. Unset: start at the
	// first frame's second.
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Start string `json:"start,omitempty"`
}

// PacketStatus is the packet receiver's counters (the /status "packets" section), all
// since the receiver started. packets = receivedPackets + late + outOfWindow +
// duplicate + malformed + invalid + outOfRange + beforeStart + control; kernelDrops
// (dropped by the kernel before the socket), truncated and refused are not in packets.
type PacketStatus struct {
	// protocol is the receiver's packet protocol: spead or vdif.
	// +optional
	Protocol string `json:"protocol,omitempty"`
	// packets is every packet the sockets delivered.
	Packets int64 `json:"packets"`
	// receivedPackets were placed in the ring.
	ReceivedPackets int64 `json:"receivedPackets"`
	// receivedBytes is the payload bytes placed in the ring.
	ReceivedBytes int64 `json:"receivedBytes"`
	// late arrived behind the reorder window.
	Late int64 `json:"late"`
	// outOfWindow were too far ahead of the reorder window.
	OutOfWindow int64 `json:"outOfWindow"`
	// duplicate repeated bytes already placed.
	Duplicate int64 `json:"duplicate"`
	// malformed could not be decoded.
	Malformed int64 `json:"malformed"`
	// invalid decoded but broke the stream's rules (for example a VDIF invalid flag).
	Invalid int64 `json:"invalid"`
	// outOfRange named a channel or thread outside the placement rule.
	OutOfRange int64 `json:"outOfRange"`
	// beforeStart came before the observation's start.
	BeforeStart int64 `json:"beforeStart"`
	// control were stream control packets (SPEAD stream start or stop).
	Control int64 `json:"control"`
	// kernelDrops were dropped by the kernel before the sockets (SO_RXQ_OVFL).
	KernelDrops int64 `json:"kernelDrops"`
	// truncated were longer than the largest packet accepted, and not placed.
	Truncated int64 `json:"truncated"`
	// refused came from senders outside network.allowedSenders, and were not placed.
	// +optional
	Refused int64 `json:"refused"`
	// zeroFilledBytes are payload bytes that never arrived, zero-filled in the ring.
	ZeroFilledBytes int64 `json:"zeroFilledBytes"`
	// blocks is the ring blocks the packet receiver handed to the readers.
	Blocks int64 `json:"blocks"`
	// loss is the share of packets lost, for display, e.g. "0.02%": late, outOfWindow,
	// duplicate, malformed, invalid, outOfRange and kernelDrops of packets plus
	// kernelDrops.
	// +optional
	Loss string `json:"loss,omitempty"`
}
