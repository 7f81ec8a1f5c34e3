package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultResourceName is the extended resource the device plugin advertises and a
// capture pod requests one unit of.
const DefaultResourceName = "ringcap.io/rdma"

// ReceiverContainerName is the name of the receiver container in a capture pod; reader
// containers may not use it.
const ReceiverContainerName = "receiver"

// RingCapture is one capture: a PSRDADA ring created in a pod's IPC namespace, an RDMA
// receiver writing into it and reader containers reading it, run on a node that has an
// RDMA device.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rcap,categories=ringcap
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.node`
// +kubebuilder:printcolumn:name="MR mode",type=string,JSONPath=`.status.memoryRegistration.mode`
// +kubebuilder:printcolumn:name="QPs",type=integer,JSONPath=`.status.running.queuePairs`
// +kubebuilder:printcolumn:name="Received",type=string,JSONPath=`.status.received`
// +kubebuilder:printcolumn:name="Rate",type=string,JSONPath=`.status.rate`
// +kubebuilder:printcolumn:name="Fill",type=string,JSONPath=`.status.ring.fill`,description="Blocks in use (filled for a reader or held open by the receiver) of the ring's blocks (status.ring.fill)"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.status.endpoint.address`,priority=1,description="The receiver's address (status.endpoint.address)"
// +kubebuilder:printcolumn:name="Port",type=integer,JSONPath=`.status.endpoint.port`,priority=1,description="The handshake port a sender connects to (status.endpoint.port)"
// +kubebuilder:printcolumn:name="GID index",type=integer,JSONPath=`.status.endpoint.gidIndex`,priority=1,description="The GID index the receiver uses (status.endpoint.gidIndex)"
// +kubebuilder:printcolumn:name="Blocks",type=integer,JSONPath=`.status.running.blocks`,priority=1,description="Data blocks of the running ring (status.running.blocks)"
// +kubebuilder:printcolumn:name="Block bytes",type=integer,JSONPath=`.status.running.blockBytes`,priority=1,description="Bytes per data block of the running ring (status.running.blockBytes)"
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.status.observation.source`,priority=1,description="SOURCE of the current (or last) observation's header"
// +kubebuilder:printcolumn:name="Transport",type=string,JSONPath=`.status.running.transport`,priority=1,description="The transport the receiver runs: Verbs or OFI (status.running.transport; the provider is status.running.ofiProvider)"
// +kubebuilder:printcolumn:name="Held back (s)",type=integer,JSONPath=`.status.heldBackSeconds`,priority=1,description="Seconds the readers held the receiver back (status.heldBackSeconds)"
// +kubebuilder:printcolumn:name="Loss",type=string,JSONPath=`.status.packets.loss`,priority=1,description="Packets lost by a SPEAD or VDIF receiver (late, out of window, duplicate, malformed, invalid, out of range and dropped by the kernel) of the packets it was sent (status.packets.loss)"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || !has(oldSelf.status.pod) || !has(oldSelf.status.phase) || oldSelf.status.phase in ['Succeeded', 'Failed'] || !(oldSelf.status.phase == 'Receiving' || (has(oldSelf.status.bytesReceived) && oldSelf.status.bytesReceived > 0) || (has(oldSelf.status.observations) && oldSelf.status.observations > 0)) || self.spec.ring == oldSelf.spec.ring",message="spec.ring is immutable while the capture pod holds data (it has received data and the capture is not Succeeded or Failed); a pod that has received nothing is replaced at once by a spec change",fieldPath=".spec.ring",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || !has(oldSelf.status.pod) || !has(oldSelf.status.phase) || oldSelf.status.phase in ['Succeeded', 'Failed'] || !(oldSelf.status.phase == 'Receiving' || (has(oldSelf.status.bytesReceived) && oldSelf.status.bytesReceived > 0) || (has(oldSelf.status.observations) && oldSelf.status.observations > 0)) || self.spec.receiver.mode == oldSelf.spec.receiver.mode",message="spec.receiver.mode is immutable while the capture pod holds data (it has received data and the capture is not Succeeded or Failed); a pod that has received nothing is replaced at once by a spec change",fieldPath=".spec.receiver.mode",reason=FieldValueForbidden
type RingCapture struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec describes the ring, the receiver, the readers and where the pod may run.
	// +required
	Spec RingCaptureSpec `json:"spec"`

	// status is the observed state, written by the operator.
	// +optional
	Status RingCaptureStatus `json:"status,omitempty"`
}

// RingCaptureSpec is the desired capture.
//
// +kubebuilder:validation:XValidation:rule="(has(self.receiver.protocol) && self.receiver.protocol != 'RDMA') || self.ring.blockBytes % self.receiver.messageBytes == 0",message="spec.receiver.messageBytes must divide spec.ring.blockBytes",fieldPath=".receiver.messageBytes"
// +kubebuilder:validation:XValidation:rule="!has(self.receiver.udp) || self.receiver.udp.reorderBlocks <= self.ring.blocks",message="spec.receiver.udp.reorderBlocks must not exceed spec.ring.blocks: the reorder window holds that many ring blocks open",fieldPath=".receiver.udp.reorderBlocks"
// +kubebuilder:validation:XValidation:rule="!has(self.receiver.udp) || !has(self.receiver.udp.presenceGranuleBytes) || self.receiver.udp.presenceGranuleBytes <= self.ring.blockBytes",message="spec.receiver.udp.presenceGranuleBytes must not exceed spec.ring.blockBytes: a granule is a part of a data block",fieldPath=".receiver.udp.presenceGranuleBytes"
// +kubebuilder:validation:XValidation:rule="!has(self.receiver.udp) || !has(self.network) || self.network.mode != 'Host' || self.receiver.udp.ports.all(p, p >= 1024)",message="spec.receiver.udp.ports must be at least 1024 when spec.network.mode is Host: the receiver runs without privileges in the node's network namespace, where ports below 1024 need CAP_NET_BIND_SERVICE",fieldPath=".receiver.udp.ports"
// +kubebuilder:validation:XValidation:rule="self.receiver.memoryRegistration != 'WholeRing' || self.ring.blockBytes % 4096 == 0",message="spec.ring.blockBytes must be a multiple of 4096 when spec.receiver.memoryRegistration is WholeRing",fieldPath=".ring.blockBytes"
// +kubebuilder:validation:XValidation:rule="!has(self.readers) || size(self.readers) <= self.ring.readers",message="spec.readers has more containers than spec.ring.readers reader slots",fieldPath=".readers"
// +kubebuilder:validation:XValidation:rule="!has(self.network) || self.network.mode != 'Host' || (self.receiver.port >= 1024 && self.receiver.metricsPort >= 1024)",message="spec.receiver.port and spec.receiver.metricsPort must be at least 1024 when spec.network.mode is Host: the receiver runs without privileges in the node's network namespace, where ports below 1024 need CAP_NET_BIND_SERVICE",fieldPath=".receiver.port"
// +kubebuilder:validation:XValidation:rule="!has(self.network) || self.network.mode != 'Host' || !has(self.receiver.transport) || self.receiver.transport != 'OFI' || !has(self.receiver.ofiProvider) || self.receiver.ofiProvider != 'efa'",message="spec.network.mode Host listens on the address of the receiver's RoCE v2 GID, and an EFA (spec.receiver.ofiProvider efa) has no RoCE GID: use network mode Pod (on EKS a pod's IP is a VPC address senders in the VPC reach) or Attachment",fieldPath=".network.mode"
// +kubebuilder:validation:XValidation:rule="!has(self.receiver.udp) || !has(self.receiver.udp.presenceKey) || !has(self.ring.key) || type(self.ring.key) != string || self.receiver.udp.presenceKey.lowerAscii().find('[1-9a-f][0-9a-f]*$') != string(self.ring.key).lowerAscii().find('[1-9a-f][0-9a-f]*$')",message="spec.receiver.udp.presenceKey must differ from spec.ring.key: the presence ring is a second ring beside the data ring",fieldPath=".receiver.udp.presenceKey"
// +kubebuilder:validation:XValidation:rule="(has(self.ring.hostIPC) && self.ring.hostIPC) || (has(self.readers) ? size(self.readers) : 0) >= self.ring.readers",message="spec.ring.readers has more reader slots than spec.readers has containers: the pod has its own IPC namespace, so nothing else can take the free slots and the receiver would stop at the first full ring; add reader containers, lower spec.ring.readers, or set spec.ring.hostIPC to leave the free slots to readers on the node",fieldPath=".ring.readers"
type RingCaptureSpec struct {
	// ring is the PSRDADA ring the receiver creates in the pod's IPC namespace.
	// +kubebuilder:default={key: "dada", blockBytes: 524288, blocks: 4, readers: 1, headerBlockBytes: 4096, lockMemory: false, hugePages: false, hostIPC: false}
	// +optional
	Ring RingSpec `json:"ring,omitempty"`

	// receiver configures `ringcap recv`, the receiver that fills the ring: over RDMA
	// from a ringcap sender, or from SPEAD or VDIF packets over UDP (protocol).
	// +kubebuilder:default={}
	// +optional
	Receiver ReceiverSpec `json:"receiver,omitempty"`

	// readers are containers that read the ring beside the receiver, in the same pod
	// and so in the same IPC namespace: for example `ringcap ring read` or a PSRDADA
	// tool such as dada_dbdisk. Each one takes one of ring.readers reader slots; there
	// must be one container per slot unless ring.hostIPC leaves the other slots to
	// readers on the node.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Readers []ReaderContainer `json:"readers,omitempty"`

	// volumes are storage the capture pod holds for its readers (readers[].volumeMounts),
	// for example a PersistentVolumeClaim a `ringcap ring read --dada-dir` or dada_dbdisk
	// writes its files to. Each has a name and exactly one source: persistentVolumeClaim,
	// hostPath, nfs or emptyDir, as in a pod.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Volumes []CaptureVolume `json:"volumes,omitempty"`

	// nodeSelector restricts the nodes the capture pod may run on (in addition to
	// having the RDMA resource).
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// affinity is the capture pod's affinity.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// tolerations are the capture pod's tolerations.
	// +listType=atomic
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// priorityClassName is the capture pod's priority class.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// images overrides the operator's default images.
	// +optional
	Images ImagesSpec `json:"images,omitempty"`

	// network is the network the receiver listens on (the pod network, the node's, or
	// a secondary attachment on the data network) and who may send to it.
	// +kubebuilder:default={mode: Pod}
	// +optional
	Network NetworkSpec `json:"network,omitempty"`

	// startDeadlineSeconds is how long the capture pod may take, from its scheduling
	// on a node (when it takes the node's RDMA unit) until its receiver listens: image
	// pulls, container start, ring creation. After that the capture fails with reason
	// StartDeadlineExceeded and its pod is stopped, which releases the unit. Waiting
	// for a node does not count (an unscheduled pod holds no unit).
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +optional
	StartDeadlineSeconds *int32 `json:"startDeadlineSeconds,omitempty"`

	// interruptionPolicy is what the operator does when a run is interrupted: its pod
	// deleted (kubectl delete pod), evicted (kubectl drain, a node's taint) or lost
	// with its node after the receiver accepted data. Restart (the default) records
	// the interrupted run in status.lastRun, counts it in status.restarts and starts a
	// new pod of the same spec; Fail fails the capture with reason RunInterrupted
	// (a new pod starts only when the spec changes). A pod lost before it received
	// data is replaced in either case: nothing was lost.
	// +kubebuilder:default=Restart
	// +optional
	InterruptionPolicy InterruptionPolicy `json:"interruptionPolicy,omitempty"`
}

// InterruptionPolicy is what happens to a capture whose pod is lost mid-run.
// +kubebuilder:validation:Enum=Restart;Fail
type InterruptionPolicy string

const (
	// InterruptionRestart records the interrupted run and starts a new pod.
	InterruptionRestart InterruptionPolicy = "Restart"
	// InterruptionFail fails the capture.
	InterruptionFail InterruptionPolicy = "Fail"
)

// DefaultStartDeadlineSeconds is spec.startDeadlineSeconds when it is not set.
const DefaultStartDeadlineSeconds = 600

// RingSpec is the geometry of a PSRDADA ring (as dada_db's flags) and its header.
//
// +kubebuilder:validation:XValidation:rule="!self.hugePages || self.blockBytes % 2097152 == 0",message="ring.blockBytes must be a multiple of 2 MiB (2097152) when ring.hugePages is true",fieldPath=".blockBytes"
// +kubebuilder:validation:XValidation:rule="self.blocks * self.blockBytes <= 68719476736",message="ring.blocks * ring.blockBytes must not exceed 64 GiB",fieldPath=".blocks"
// +kubebuilder:validation:XValidation:rule="!has(self.header) || !has(self.header.template) || size(self.header.template) < self.headerBlockBytes",message="ring.header.template must be shorter than ring.headerBlockBytes",fieldPath=".header.template"
// +kubebuilder:validation:XValidation:rule="!has(self.header) || !has(self.header.values) || self.header.values.map(k, (size(k) > 12 ? size(k) : 12) + size(self.header.values[k]) + 2).sum() + 120 <= self.headerBlockBytes",message="ring.header.values do not fit ring.headerBlockBytes: each value takes a line of at least 12 (or the key's length) + 2 bytes more than the value, and the receiver's own keywords 120 bytes; raise ring.headerBlockBytes or shorten the values",fieldPath=".header.values"
type RingSpec struct {
	// key is the SysV key of the data ring in hex, as dada_db -k ("dada", "0xdada" or
	// "0XDADA"); the header ring uses key+1. Not 0, at most 0x7fffffff. It is a string:
	// quote it in YAML, where an unquoted 0xdada is the number 56026 and an unquoted
	// 1234 the decimal number 1234 (the API refuses numbers with a message saying so,
	// rather than guess which key was meant).
	// +kubebuilder:default="dada"
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Type=""
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=10
	// +kubebuilder:validation:XValidation:rule="type(self) == string",message="ring.key must be a string: quote it (key: \"0xdada\"); unquoted, YAML reads 0xdada as the number 56026"
	// +kubebuilder:validation:XValidation:rule="type(self) != string || self.matches('^(0[xX])?[0-9a-fA-F]{1,8}$')",message="ring.key must be a hex SysV key such as dada or 0xdada"
	// +kubebuilder:validation:XValidation:rule="type(self) != string || !self.matches('^(0[xX])?0+$')",message="ring.key must not be 0 (IPC_PRIVATE)"
	// +kubebuilder:validation:XValidation:rule="type(self) != string || !self.matches('^(0[xX])?[89a-fA-F][0-9a-fA-F]{7}$')",message="ring.key must be at most 0x7fffffff"
	// +optional
	Key string `json:"key,omitempty"`

	// blockBytes is the size of one data block (dada_db -b).
	// +kubebuilder:default=524288
	// +kubebuilder:validation:Minimum=4096
	// +kubebuilder:validation:Maximum=4294967296
	// +optional
	BlockBytes int64 `json:"blockBytes,omitempty"`

	// blocks is the number of data blocks (dada_db -n).
	// +kubebuilder:default=4
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=32767
	// +optional
	Blocks int64 `json:"blocks,omitempty"`

	// readers is the number of reader slots (dada_db -r; the ring holds up to 8,
	// PSRDADA's IPCBUF_READERS, where dada_db itself creates at most 5): every reader
	// must clear a block before the receiver reuses it. Each slot needs a reader: one container in
	// spec.readers per slot, or, with hostIPC, readers on the node outside the pod.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=8
	// +optional
	Readers int32 `json:"readers,omitempty"`

	// headerBlockBytes is the size of one header block (dada_db -a); the header ring
	// has 8 blocks.
	// +kubebuilder:default=4096
	// +kubebuilder:validation:Minimum=4096
	// +kubebuilder:validation:Maximum=1048576
	// +optional
	HeaderBlockBytes int64 `json:"headerBlockBytes,omitempty"`

	// lockMemory locks the ring's pages in memory (dada_db -l).
	// +kubebuilder:default=false
	// +optional
	LockMemory bool `json:"lockMemory,omitempty"`

	// hugePages backs the data blocks with 2 MiB huge pages, whatever the node's
	// default huge page size; the pod then requests hugepages-2Mi for the ring.
	// +kubebuilder:default=false
	// +optional
	HugePages bool `json:"hugePages,omitempty"`

	// hostIPC runs the capture pod in the node's IPC namespace (the pod's hostIPC), so
	// that PSRDADA readers on the node outside the pod (dada_dbdisk started by hand, a
	// pipeline in another pod with hostIPC) can attach to the ring and take the reader
	// slots spec.readers leaves free. This exposes every SysV shared memory segment,
	// semaphore and message queue of the node to the pod's containers and the ring to
	// every process on the node; the ring's key must then be unique on the node (a
	// second capture with the same key fails to create its ring), and a receiver killed
	// without its clean-up leaves the ring on the node until it is destroyed by hand
	// (`ringcap ring destroy -k KEY`). Pod Security admits such a pod only at the
	// privileged level.
	// +kubebuilder:default=false
	// +optional
	HostIPC bool `json:"hostIPC,omitempty"`

	// header is the ASCII header the receiver writes at the start of each observation.
	// +optional
	Header *RingHeaderSpec `json:"header,omitempty"`
}

// RingHeaderSpec is the observation header: an ASCII template (inline or from a
// ConfigMap) plus key/value pairs that override it.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.template) && has(self.configMapRef))",message="ring.header: set at most one of template and configMapRef"
type RingHeaderSpec struct {
	// values are header keys and values (for example TELESCOPE: Parkes); they override
	// the same keys of the template. Each value is one printable ASCII word (PSRDADA
	// readers take the first word after the key: write Jane_Doe, not "Jane Doe");
	// HDR_SIZE, OBS_OFFSET and RINGCAP_* are the receiver's, TRANSFER_SIZE is refused
	// (PSRDADA's dada_dbib would skip its closing handshake), and UTC_START is
	// YYYY-MM-DD-hh:mm:ss (UTC). The values' lines and the receiver's own keywords
	// must fit ring.headerBlockBytes.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[A-Z][A-Z0-9_]{0,31}$'))",message="ring.header.values keys must be upper-case PSRDADA header keys (A-Z, 0-9, _; at most 32 characters)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, self[k].matches('^[!-~]+$'))",message="ring.header.values values must each be one printable ASCII word: not empty, no blanks or line breaks, no characters beyond ASCII (PSRDADA readers take the first word after the key; write Jane_Doe, not \"Jane Doe\")"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'HDR_SIZE' && k != 'OBS_OFFSET' && !k.startsWith('RINGCAP_'))",message="ring.header.values must not set HDR_SIZE, OBS_OFFSET or RINGCAP_* keys: the receiver sets them in every observation's header"
	// +kubebuilder:validation:XValidation:rule="!('TRANSFER_SIZE' in self)",message="ring.header.values must not set TRANSFER_SIZE: PSRDADA's dada_dbib, finding it, skips its closing handshake and dada_ibdb waits forever"
	// +kubebuilder:validation:XValidation:rule="!('UTC_START' in self) || self['UTC_START'].matches('^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])-([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]$')",message="ring.header.values UTC_START must be YYYY-MM-DD-hh:mm:ss (UTC), for example 2026-11-28-13:45:00"
	// +optional
	Values map[string]HeaderValue `json:"values,omitempty"`

	// template is an ASCII PSRDADA header, one "KEY VALUE" per line. Keys the
	// receiver sets (HDR_SIZE, OBS_OFFSET, RINGCAP_*) are replaced; TRANSFER_SIZE is
	// refused. The operator checks the template (this one or the ConfigMap's) before it
	// starts the receiver and reports a bad one in the HeaderValid condition.
	// +kubebuilder:validation:MaxLength=65536
	// +kubebuilder:validation:XValidation:rule="self.matches('^[\\t\\n\\r -~]*$')",message="ring.header.template must be ASCII text (printable characters, tabs and line breaks)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^|\\n)TRANSFER_SIZE[ \\t]')",message="ring.header.template must not set TRANSFER_SIZE: PSRDADA's dada_dbib, finding it, skips its closing handshake and dada_ibdb waits forever"
	// +optional
	Template string `json:"template,omitempty"`

	// configMapRef names a ConfigMap key holding the header template.
	// +optional
	ConfigMapRef *ConfigMapKeyReference `json:"configMapRef,omitempty"`
}

// HeaderValue is one header value: one printable ASCII word (ring.header.values says more).
// +kubebuilder:validation:MaxLength=256
type HeaderValue string

// ConfigMapKeyReference names one key of a ConfigMap in the RingCapture's namespace.
type ConfigMapKeyReference struct {
	// name is the ConfigMap's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// key is the key in the ConfigMap's data.
	// +kubebuilder:default="header"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +optional
	Key string `json:"key,omitempty"`
}

// The header check: before it creates the capture pod the operator reads the header
// template (inline or from its ConfigMap) and checks it with ring.header.values as the
// receiver would at start. A header that cannot work keeps the pod from being created.
const (
	// ConditionHeaderValid: the observation header (template, ConfigMap and values)
	// can be built and fits ring.headerBlockBytes. False with HeaderInvalid or
	// HeaderConfigMapNotFound: no pod is created (Ready is False with the same reason
	// and message) until the header is fixed.
	ConditionHeaderValid = "HeaderValid"

	ReasonHeaderValid             = "HeaderValid"
	ReasonHeaderInvalid           = "HeaderInvalid"
	ReasonHeaderConfigMapNotFound = "HeaderConfigMapNotFound"
)

// TransferMode is how the sender moves data: two-sided SEND/RECV or one-sided RDMA WRITE.
// +kubebuilder:validation:Enum=Send;Write
type TransferMode string

const (
	// TransferModeSend is two-sided SEND/RECV into posted receive buffers.
	TransferModeSend TransferMode = "Send"
	// TransferModeWrite is one-sided RDMA WRITE into the ring.
	TransferModeWrite TransferMode = "Write"
)

// IPCLockPolicy says when the receiver container gets the IPC_LOCK capability.
// +kubebuilder:validation:Enum=Auto;Always;Never
type IPCLockPolicy string

const (
	// IPCLockAuto adds IPC_LOCK only when the memlock limit the container runtime gives
	// containers (each candidate node's RDMANode status.containerMemlock) is below what
	// the receiver registers, or unknown.
	IPCLockAuto IPCLockPolicy = "Auto"
	// IPCLockAlways always adds IPC_LOCK (a privileged namespace is then needed).
	IPCLockAlways IPCLockPolicy = "Always"
	// IPCLockNever never adds it: the node's memlock limit must cover the ring.
	IPCLockNever IPCLockPolicy = "Never"
)

// MemoryRegistrationMode is how the ring is registered with the RDMA device.
// +kubebuilder:validation:Enum=Auto;WholeRing;PerBlock
type MemoryRegistrationMode string

const (
	// MemoryRegistrationAuto registers the whole ring when its blocks can be mapped
	// back to back, else each block.
	MemoryRegistrationAuto MemoryRegistrationMode = "Auto"
	// MemoryRegistrationWholeRing registers the whole ring as one region.
	MemoryRegistrationWholeRing MemoryRegistrationMode = "WholeRing"
	// MemoryRegistrationPerBlock registers each block as its own region.
	MemoryRegistrationPerBlock MemoryRegistrationMode = "PerBlock"
)

// Transport is how the receiver reaches the RDMA device: raw verbs or libfabric.
// +kubebuilder:validation:Enum=Verbs;OFI
type Transport string

const (
	// TransportVerbs is raw verbs reliable-connected (RC) queue pairs (rdma-core):
	// RoCE, InfiniBand, Soft-RoCE.
	TransportVerbs Transport = "Verbs"
	// TransportOFI is libfabric (OpenFabrics Interfaces) reliable-datagram endpoints:
	// AWS EFA (provider efa), verbs;ofi_rxm, tcp;ofi_rxm, shm.
	TransportOFI Transport = "OFI"
)

// ReceiverSpec configures `ringcap recv`.
//
// +kubebuilder:validation:XValidation:rule="!has(self.port) || !has(self.metricsPort) || self.port != self.metricsPort",message="receiver.metricsPort must differ from receiver.port (they default to 9100 and 18515): the handshake and /metrics cannot share a TCP port",fieldPath=".metricsPort"
// +kubebuilder:validation:XValidation:rule="!(has(self.deviceClassName) && has(self.resourceClaimTemplateName))",message="receiver: set at most one of deviceClassName and resourceClaimTemplateName (the template names its own device class)",fieldPath=".resourceClaimTemplateName"
// +kubebuilder:validation:XValidation:rule="!has(self.selector) || has(self.deviceClassName)",message="receiver.selector needs receiver.deviceClassName (a named resourceClaimTemplateName carries its own selectors)",fieldPath=".selector"
// +kubebuilder:validation:XValidation:rule="!(has(self.deviceClassName) || has(self.resourceClaimTemplateName)) || !has(self.resourceName) || self.resourceName == 'ringcap.io/rdma'",message="receiver.resourceName is the device plugin's extended resource: leave it unset when the device comes through a claim (deviceClassName or resourceClaimTemplateName)",fieldPath=".resourceName"
// +kubebuilder:validation:XValidation:rule="!(has(self.deviceClassName) || has(self.resourceClaimTemplateName)) || !has(self.resources) || ((!has(self.resources.requests) || !('ringcap.io/rdma' in self.resources.requests)) && (!has(self.resources.limits) || !('ringcap.io/rdma' in self.resources.limits)))",message="receiver.resources must not request ringcap.io/rdma when the device comes through a claim (deviceClassName or resourceClaimTemplateName): the pod would need a device from both",fieldPath=".resources"
// +kubebuilder:validation:XValidation:rule="!has(self.ofiProvider) || (has(self.transport) && self.transport == 'OFI')",message="receiver.ofiProvider is only for receiver.transport OFI (libfabric); set transport: OFI or remove ofiProvider",fieldPath=".ofiProvider"
// +kubebuilder:validation:XValidation:rule="!has(self.gidIndex) || !has(self.transport) || self.transport != 'OFI'",message="receiver.gidIndex is a verbs setting and cannot apply with receiver.transport OFI: libfabric providers address their endpoints themselves (EFA has no RoCE GID); remove gidIndex",fieldPath=".gidIndex"
// +kubebuilder:validation:XValidation:rule="(has(self.protocol) && self.protocol != 'RDMA') == has(self.udp)",message="receiver.udp (its ports) is required when receiver.protocol is SPEAD or VDIF, and only then (RDMA takes no UDP packets)",fieldPath=".udp"
// +kubebuilder:validation:XValidation:rule="(has(self.protocol) && self.protocol == 'SPEAD') == has(self.spead)",message="receiver.spead (the placement rule) is required when receiver.protocol is SPEAD, and only then",fieldPath=".spead"
// +kubebuilder:validation:XValidation:rule="(has(self.protocol) && self.protocol == 'VDIF') == has(self.vdif)",message="receiver.vdif (framesPerSecond at least) is required when receiver.protocol is VDIF, and only then",fieldPath=".vdif"
// +kubebuilder:validation:XValidation:rule="!has(self.protocol) || self.protocol == 'RDMA' || !(has(self.deviceClassName) || has(self.resourceClaimTemplateName) || has(self.selector) || (has(self.resourceName) && self.resourceName != 'ringcap.io/rdma') || (has(self.resources) && ((has(self.resources.requests) && 'ringcap.io/rdma' in self.resources.requests) || (has(self.resources.limits) && 'ringcap.io/rdma' in self.resources.limits))))",message="receiver.protocol SPEAD or VDIF takes no RDMA device: remove deviceClassName, resourceClaimTemplateName, selector, resourceName and any ringcap.io/rdma in resources",fieldPath=".protocol"
// +kubebuilder:validation:XValidation:rule="!has(self.protocol) || self.protocol == 'RDMA' || !has(self.stop) || !has(self.stop.after) || self.stop.after != 'Observations'",message="receiver.stop.after Observations is for RDMA captures: a SPEAD or VDIF capture is one observation; stop it after Bytes or Duration",fieldPath=".stop"
// +kubebuilder:validation:XValidation:rule="!has(self.protocol) || self.protocol == 'RDMA' || !((has(self.transport) && self.transport == 'OFI') || has(self.ofiProvider) || has(self.gidIndex) || (has(self.busyPoll) && self.busyPoll))",message="receiver.protocol SPEAD or VDIF receives over UDP sockets: transport OFI, ofiProvider, gidIndex and busyPoll are RDMA settings; remove them",fieldPath=".protocol"
type ReceiverSpec struct {
	// protocol is what the receiver takes in (`ringcap recv --protocol`): RDMA (the
	// default) from a ringcap sender over RDMA queue pairs, or SPEAD or VDIF packets
	// over UDP (udp, and spead or vdif) from digitisers and beamformers. A packet
	// capture takes no RDMA device; the RDMA settings (queuePairs, mode,
	// memoryRegistration, messageBytes, receiveDepth, port) do not apply to it, and
	// those without a default (transport OFI, ofiProvider, gidIndex, busyPoll, a device
	// claim, another resourceName) are refused with it.
	// +kubebuilder:default=RDMA
	// +optional
	Protocol ReceiverProtocol `json:"protocol,omitempty"`

	// udp is where a SPEAD or VDIF receiver takes its packets: ports, bind address,
	// multicast groups, sockets and buffers. Required with protocol SPEAD or VDIF,
	// refused with RDMA.
	// +optional
	UDP *UDPSpec `json:"udp,omitempty"`

	// spead is the SPEAD placement rule and time reference; required with protocol
	// SPEAD, refused with any other.
	// +optional
	SPEAD *SPEADSpec `json:"spead,omitempty"`

	// vdif is the VDIF placement rule and start; required with protocol VDIF, refused
	// with any other.
	// +optional
	VDIF *VDIFSpec `json:"vdif,omitempty"`

	// transport is how the receiver reaches the RDMA device: Verbs (raw verbs RC queue
	// pairs: RoCE, InfiniBand, Soft-RoCE) or OFI (libfabric reliable-datagram endpoints:
	// AWS EFA, or verbs;ofi_rxm and tcp;ofi_rxm elsewhere); `ringcap recv --transport`.
	// A sender must use the same transport and provider.
	// +kubebuilder:default=Verbs
	// +optional
	Transport Transport `json:"transport,omitempty"`

	// ofiProvider is the libfabric provider with transport OFI, for example efa (AWS),
	// verbs;ofi_rxm or tcp;ofi_rxm (`ringcap recv --ofi-provider`). By default the
	// device plugin's (efa on EFA devices), else the first provider libfabric offers.
	// Whether the node's provider can do the mode (RMA and remote CQ data for Write,
	// messages for Send) is checked by the receiver when it starts.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]*(;[a-z][a-z0-9_]*)*$`
	// +optional
	OFIProvider string `json:"ofiProvider,omitempty"`

	// queuePairs is the number of RC queue pairs (connections) the receiver accepts.
	// +kubebuilder:default=4
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	QueuePairs int32 `json:"queuePairs,omitempty"`

	// mode is the transfer mode: Send (two-sided) or Write (one-sided RDMA WRITE).
	// +kubebuilder:default=Send
	// +optional
	Mode TransferMode `json:"mode,omitempty"`

	// memoryRegistration is how the ring is registered: Auto, WholeRing or PerBlock.
	// +kubebuilder:default=Auto
	// +optional
	MemoryRegistration MemoryRegistrationMode `json:"memoryRegistration,omitempty"`

	// ipcLock says when the receiver gets the IPC_LOCK capability, which lets it register
	// (pin) the ring beyond the container's memlock limit but which Pod Security's
	// baseline and restricted levels forbid. Auto (the default) adds it only when a node
	// the pod may run on reports a memlock limit below the ring's bytes plus 16 MiB, or
	// reports none (no RDMANode, as with the DRA driver alone); Always and Never decide
	// for every node. status.running.ipcLock says what the pod got and why.
	// +kubebuilder:default=Auto
	// +optional
	IPCLock IPCLockPolicy `json:"ipcLock,omitempty"`

	// port is the TCP port of the receiver's connection handshake.
	// +kubebuilder:default=18515
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`

	// metricsPort is the HTTP port of the receiver's /metrics and /status.
	// +kubebuilder:default=9100
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	MetricsPort int32 `json:"metricsPort,omitempty"`

	// messageBytes is the size of one RDMA message; it must divide ring.blockBytes.
	// +kubebuilder:default=65536
	// +kubebuilder:validation:Minimum=64
	// +kubebuilder:validation:Maximum=1073741824
	// +optional
	MessageBytes int64 `json:"messageBytes,omitempty"`

	// receiveDepth is the number of receive work requests posted per queue pair.
	// +kubebuilder:default=128
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16384
	// +optional
	ReceiveDepth int32 `json:"receiveDepth,omitempty"`

	// gidIndex overrides the GID index the receiver uses; by default the device
	// plugin's choice (a RoCE v2 GID of the pod's address). Verbs only.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=255
	// +optional
	GIDIndex *int32 `json:"gidIndex,omitempty"`

	// busyPoll makes the receiver poll its completion queue instead of sleeping until a
	// completion arrives (`ringcap recv --busy-poll`): lower latency for a CPU kept
	// busy. Give the receiver a core of its own (a whole-CPU request with the kubelet's
	// static CPU manager policy); on software RDMA (rxe) the spinning takes CPU from
	// the kernel's data path and lowers throughput.
	// +optional
	BusyPoll bool `json:"busyPoll,omitempty"`

	// resourceName is the extended resource of the device plugin the pod requests one
	// unit of; not used (and only its default allowed) when the device comes through a
	// claim (deviceClassName or resourceClaimTemplateName).
	// +kubebuilder:default="ringcap.io/rdma"
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="receiver.resourceName must be a domain-prefixed resource name such as ringcap.io/rdma"
	// +optional
	ResourceName string `json:"resourceName,omitempty"`

	// deviceClassName requests the receiver's RDMA device through Dynamic Resource
	// Allocation instead of the extended resource resourceName: the operator creates a
	// ResourceClaimTemplate (named after the capture, owned by it) with one request of
	// this DeviceClass, for example ringcap-rdma or ringcap-roce-v2 from ringcap's
	// chart in plugin.mode dra, and the pod claims from it. The receiver takes device,
	// port and GID from the claim's RINGCAP_* environment as from the device plugin's.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	DeviceClassName string `json:"deviceClassName,omitempty"`

	// selector is a CEL expression the claimed device must satisfy, added to the
	// DeviceClass's own selectors, for example
	// device.attributes["ringcap.io"].netdev == "eth1". Only with deviceClassName; the
	// API server of resource.k8s.io checks the expression when the template is created.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=10240
	// +optional
	Selector string `json:"selector,omitempty"`

	// resourceClaimTemplateName names an existing ResourceClaimTemplate in the
	// capture's namespace the pod claims its device from, instead of the extended
	// resource resourceName. The receiver uses the template's first device; the
	// template must give one ringcap device (class ringcap-rdma or ringcap-roce-v2)
	// for it to find its port.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	ResourceClaimTemplateName string `json:"resourceClaimTemplateName,omitempty"`

	// stop is when the receiver stops: never (the default), after a number of bytes,
	// after a duration or after a number of observations.
	// +kubebuilder:default={after: Never}
	// +optional
	Stop StopSpec `json:"stop,omitempty"`

	// resources are the receiver container's own resources (CPU, memory for the
	// process); the operator adds the ring's bytes to the memory request and limit,
	// and the RDMA resource.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// StopAfter names the condition that ends a capture.
// +kubebuilder:validation:Enum=Never;Bytes;Duration;Observations
type StopAfter string

const (
	// StopNever runs until the RingCapture is deleted.
	StopNever StopAfter = "Never"
	// StopBytes stops after stop.bytes bytes were received.
	StopBytes StopAfter = "Bytes"
	// StopDuration stops stop.duration after the receiver started.
	StopDuration StopAfter = "Duration"
	// StopObservations stops after stop.observations observations ended.
	StopObservations StopAfter = "Observations"
)

// StopSpec is a union: after says which of the other fields applies.
//
// +kubebuilder:validation:XValidation:rule="(self.after == 'Bytes') == has(self.bytes)",message="receiver.stop.bytes must be set exactly when receiver.stop.after is Bytes",fieldPath=".bytes"
// +kubebuilder:validation:XValidation:rule="(self.after == 'Duration') == has(self.duration)",message="receiver.stop.duration must be set exactly when receiver.stop.after is Duration",fieldPath=".duration"
// +kubebuilder:validation:XValidation:rule="(self.after == 'Observations') == has(self.observations)",message="receiver.stop.observations must be set exactly when receiver.stop.after is Observations",fieldPath=".observations"
type StopSpec struct {
	// after is the stop condition: Never, Bytes, Duration or Observations.
	// +kubebuilder:default=Never
	// +optional
	After StopAfter `json:"after,omitempty"`

	// bytes is the number of bytes after which the receiver stops.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Bytes *int64 `json:"bytes,omitempty"`

	// duration is how long the receiver runs, a Go duration such as "90s", "10m" or
	// "1h30m" (units ns, us, ms, s, m and h; no days: write 24h for a day).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$')",message="receiver.stop.duration must be a duration such as 90s, 10m or 1h30m (units ns, us, ms, s, m and h; no days: write 24h for a day)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self) > duration('0s')",message="receiver.stop.duration must be positive"
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`

	// observations is the number of observations after which the receiver stops.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Observations *int32 `json:"observations,omitempty"`
}

// CaptureVolume is a volume of the capture pod that reader containers can mount: a pod
// volume with one of the sources that hold a reader's data, written as in a pod.
// +kubebuilder:validation:XValidation:rule="(has(self.persistentVolumeClaim) ? 1 : 0) + (has(self.hostPath) ? 1 : 0) + (has(self.nfs) ? 1 : 0) + (has(self.emptyDir) ? 1 : 0) == 1",message="each volume must have exactly one source, one of persistentVolumeClaim, hostPath, nfs or emptyDir (storage for the readers' data; other pod volume sources such as secret, configMap or csi are not allowed)"
type CaptureVolume struct {
	// name is the volume's name in the pod, which readers[].volumeMounts[].name refers
	// to: a DNS label (lower case letters, digits and -) not starting with ringcap-
	// (the operator's own volumes).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('ringcap-')",message="must not start with ringcap- (the operator's own volumes)"
	Name string `json:"name"`

	// persistentVolumeClaim mounts a PersistentVolumeClaim of the capture's namespace.
	// +optional
	PersistentVolumeClaim *corev1.PersistentVolumeClaimVolumeSource `json:"persistentVolumeClaim,omitempty"`

	// hostPath mounts a directory or file of the node.
	// +optional
	HostPath *corev1.HostPathVolumeSource `json:"hostPath,omitempty"`

	// nfs mounts an NFS export.
	// +optional
	NFS *corev1.NFSVolumeSource `json:"nfs,omitempty"`

	// emptyDir is an empty directory that lives as long as the pod.
	// +optional
	EmptyDir *corev1.EmptyDirVolumeSource `json:"emptyDir,omitempty"`
}

// ReaderContainer is a container that reads the ring. It gets RINGCAP_RING_KEY (the
// ring's key) in its environment.
type ReaderContainer struct {
	// name is the container's name; unique, and not "receiver".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self != 'receiver'",message="readers[].name must not be receiver (the receiver container's name)"
	// +required
	Name string `json:"name"`

	// image is the container image; by default the receiver's image (ringcap).
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Image string `json:"image,omitempty"`

	// command overrides the image's entrypoint.
	// +listType=atomic
	// +optional
	Command []string `json:"command,omitempty"`

	// args are the arguments, for example ["ring", "read", "-k", "dada", "--wait", "60s"].
	// +listType=atomic
	// +optional
	Args []string `json:"args,omitempty"`

	// env are extra environment variables.
	// +listType=map
	// +listMapKey=name
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// resources are the container's resources.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// volumeMounts mount spec.volumes into the reader container, each naming one of them,
	// at an absolute mountPath outside /dev (the container's devices, /dev/shm and its
	// termination log) and /etc/ringcap (the operator's). The operator refuses a mount
	// that names no volume in spec.volumes, or whose path is one of those once cleaned
	// (//dev/, /data/../dev), before it creates the pod; the capture's status says why.
	// +listType=map
	// +listMapKey=mountPath
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(m, m.mountPath.startsWith('/'))",message="readers[].volumeMounts[].mountPath must be an absolute path (start with /)"
	// +kubebuilder:validation:XValidation:rule="self.all(m, !(m.mountPath == '/dev' || m.mountPath.startsWith('/dev/') || m.mountPath == '/etc/ringcap' || m.mountPath.startsWith('/etc/ringcap/')))",message="readers[].volumeMounts[].mountPath must not be /dev or under it (the container's devices, /dev/shm and its termination log) nor /etc/ringcap (the operator's)"
	// +optional
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`

	// restartPolicy says what happens when the reader exits while the capture runs (its
	// ring slot is then empty and holds the receiver back). FailCapture (the default)
	// fails the capture, naming the reader, its exit code and when; its pod is stopped
	// and the RDMA unit released. Restart runs the reader as a restartable sidecar: the
	// kubelet restarts it whatever its exit code, and a ringcap reader resumes the
	// observation in progress where the last one left it (a PSRDADA reader waits for
	// the next header, as in PSRDADA). A reader that exits because the capture
	// finished is normal under either policy.
	// +kubebuilder:validation:Enum=FailCapture;Restart
	// +kubebuilder:default=FailCapture
	// +optional
	RestartPolicy ReaderRestartPolicy `json:"restartPolicy,omitempty"`

	// runAsUser is the user ID the reader runs as (by default its image's user). A
	// non-zero ID also sets runAsNonRoot, which Pod Security's restricted level needs.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	RunAsUser *int64 `json:"runAsUser,omitempty"`

	// runAsGroup is the group ID the reader runs as (by default its image's group).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	RunAsGroup *int64 `json:"runAsGroup,omitempty"`
}

// ReaderRestartPolicy is what happens when a reader exits while its capture runs.
type ReaderRestartPolicy string

const (
	// ReaderFailCapture fails the capture when the reader exits while it runs.
	ReaderFailCapture ReaderRestartPolicy = "FailCapture"
	// ReaderRestart restarts the reader (a sidecar container with restartPolicy Always).
	ReaderRestart ReaderRestartPolicy = "Restart"
)

// EmptyReaderSlot is a reader container that exited while the capture runs.
type EmptyReaderSlot struct {
	// reader is the reader container's name.
	// +required
	Reader string `json:"reader"`
	// exitCode is the reader's exit code.
	// +required
	ExitCode int32 `json:"exitCode"`
	// finishedAt is when it exited.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// restarts is how often it has been restarted (restartPolicy Restart).
	// +optional
	Restarts int32 `json:"restarts,omitempty"`
}

// ImagesSpec overrides the images the operator uses.
type ImagesSpec struct {
	// receiver is the image of the receiver (and the default image of readers); it
	// must have ringcap as its entrypoint.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Receiver string `json:"receiver,omitempty"`

	// pullPolicy is the pull policy of every container of the pod.
	// +kubebuilder:validation:Enum=Always;Never;IfNotPresent
	// +optional
	PullPolicy corev1.PullPolicy `json:"pullPolicy,omitempty"`
}

// RingCapturePhase is a one-word summary of the capture's state.
// +kubebuilder:validation:Enum=Pending;Scheduled;Listening;Receiving;Succeeded;Failed
type RingCapturePhase string

const (
	// PhasePending: the pod does not exist yet or is not scheduled.
	PhasePending RingCapturePhase = "Pending"
	// PhaseScheduled: the pod is on a node; its containers or the receiver are starting.
	PhaseScheduled RingCapturePhase = "Scheduled"
	// PhaseListening: the receiver and its ring are ready and wait for a sender (no
	// data is arriving: before the first observation or between two).
	PhaseListening RingCapturePhase = "Listening"
	// PhaseReceiving: data is arriving, or the receiver met its stop condition and the
	// readers drain the ring.
	PhaseReceiving RingCapturePhase = "Receiving"
	// PhaseSucceeded: the capture ended as its stop condition said.
	PhaseSucceeded RingCapturePhase = "Succeeded"
	// PhaseFailed: the receiver or a reader failed, or the pod was lost. The operator
	// stops a failed capture's pod (its ring and RDMA unit are released) and keeps the
	// pod object, so its containers' logs stay readable.
	PhaseFailed RingCapturePhase = "Failed"
)

// Condition types of a RingCapture.
const (
	// ConditionScheduled: the pod is bound to a node. False with reason Unschedulable
	// when no node can take it (for example, none has the RDMA resource).
	ConditionScheduled = "Scheduled"
	// ConditionRingReady: the receiver created the ring.
	ConditionRingReady = "RingReady"
	// ConditionReceiverReady: the receiver listens for senders at status.endpoint.
	ConditionReceiverReady = "ReceiverReady"
	// ConditionReceiving: data is arriving.
	ConditionReceiving = "Receiving"
	// ConditionReady: the capture is up and accepts senders (the aggregate).
	ConditionReady = "Ready"
	// ConditionFailed: the capture failed; the reason says why and the message carries
	// the failing container's termination message (or the end of its log).
	ConditionFailed = "Failed"
	// ConditionReadersBehind: the readers have not freed a ring block for the receiver
	// and hold it back (and with it the sender); the message names the ring and how long.
	ConditionReadersBehind = "ReadersBehind"
	// ConditionChangePending: the spec changed while the capture pod runs an older
	// generation; the change is applied in a new pod when the current run ends
	// (status.running shows what runs meanwhile).
	ConditionChangePending = "ChangePending"
)

// RingCaptureStatus is the observed state of a capture.
type RingCaptureStatus struct {
	// observedGeneration is the spec generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase is a one-word summary of the current run: Pending, Scheduled, Listening,
	// Receiving, Succeeded or Failed.
	// +optional
	Phase RingCapturePhase `json:"phase,omitempty"`

	// conditions: Scheduled, RingReady, ReceiverReady, Receiving, Ready, Failed,
	// ReadersBehind, ChangePending, ExternallyReachable and HeaderValid.
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// node is the node the pod runs on.
	// +optional
	Node string `json:"node,omitempty"`

	// pod is the name of the capture pod.
	// +optional
	Pod string `json:"pod,omitempty"`

	// endpoint is what a sender needs to connect (`ringcap send --connect address:port`).
	// +optional
	Endpoint *EndpointStatus `json:"endpoint,omitempty"`

	// memoryRegistration is how the receiver registered the ring.
	// +optional
	MemoryRegistration *MemoryRegistrationStatus `json:"memoryRegistration,omitempty"`

	// bytesReceived is the number of bytes written into the ring.
	// +optional
	BytesReceived int64 `json:"bytesReceived,omitempty"`

	// received is bytesReceived for people, for example "1.5 GiB".
	// +optional
	Received string `json:"received,omitempty"`

	// blocksFilled is the number of ring blocks filled.
	// +optional
	BlocksFilled int64 `json:"blocksFilled,omitempty"`

	// observations is the number of observations that ended.
	// +optional
	Observations int64 `json:"observations,omitempty"`

	// rateBytesPerSecond is the receive rate over the receiver's last interval
	// while data arrives; otherwise the average rate of the last observation
	// (0 before the first).
	// +optional
	RateBytesPerSecond int64 `json:"rateBytesPerSecond,omitempty"`

	// rate is rateBytesPerSecond for people, in bits per second, for example "9.6 Gbit/s".
	// +optional
	Rate string `json:"rate,omitempty"`

	// startTime is when the receiver started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the capture ended.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// heldBackSeconds is how long, in whole seconds, the readers have held the receiver
	// back in this run (waiting for a free ring block), including a hold still going on.
	// +optional
	HeldBackSeconds int64 `json:"heldBackSeconds,omitempty"`

	// observation is the header of the observation being received or, between
	// observations, of the last one, as the receiver wrote it into the ring.
	// +optional
	Observation *ObservationHeaderStatus `json:"observation,omitempty"`

	// running is the configuration the capture pod runs with, read from the pod and the
	// receiver (not from spec, which may hold a change not applied yet).
	// +optional
	Running *RunningStatus `json:"running,omitempty"`

	// lastRun summarises the previous run, recorded when a spec change started a new one
	// or when the run was interrupted (its pod deleted, evicted or lost with its node:
	// reason RunInterrupted) and a new pod started.
	// +optional
	LastRun *RunSummary `json:"lastRun,omitempty"`

	// restarts is how many times the operator started a new pod after a run was
	// interrupted (spec.interruptionPolicy Restart); the last one is in lastRun.
	// +optional
	Restarts int32 `json:"restarts,omitempty"`
	// emptyReaderSlots lists the readers that exited while the capture runs (not because
	// it finished): their ring slots are empty and hold the receiver back until a reader
	// takes them again.
	// +listType=map
	// +listMapKey=reader
	// +optional
	EmptyReaderSlots []EmptyReaderSlot `json:"emptyReaderSlots,omitempty"`

	// ring is how full the running ring is and how far each reader slot is behind, as the
	// receiver read it from the ring's own sync fields and semaphores at its last report.
	// +optional
	Ring *RingFillStatus `json:"ring,omitempty"`

	// packets are a SPEAD or VDIF receiver's packet counters, by outcome, and the loss;
	// absent for RDMA captures.
	// +optional
	Packets *PacketStatus `json:"packets,omitempty"`
}

// RingFillStatus is the running ring's fill and its reader slots.
type RingFillStatus struct {
	// filledBlocks are the blocks the slowest reader slot has still to open; at blocks the
	// ring is full and the receiver holds the sender back.
	FilledBlocks int32 `json:"filledBlocks"`
	// openBlocks are the blocks the receiver holds open (data landing in them, or opened
	// ahead for it); they are not free for new data either.
	OpenBlocks int32 `json:"openBlocks"`
	// blocks are the ring's data blocks.
	Blocks int32 `json:"blocks"`
	// fill is the blocks in use (filled plus open) of blocks, for display, e.g. "3/8": at
	// blocks/blocks the receiver waits for a reader to clear one.
	Fill string `json:"fill"`
	// readers are the ring's reader slots, by slot number.
	// +listType=map
	// +listMapKey=slot
	// +optional
	Readers []ReaderSlotStatus `json:"readers,omitempty"`
}

// ReaderSlotStatus is one reader slot of the running ring.
type ReaderSlotStatus struct {
	// slot is the reader slot's number (0 to readers-1).
	Slot int32 `json:"slot"`
	// connected is true while a reader holds the slot; an empty slot still holds the
	// receiver back once the ring fills.
	Connected bool `json:"connected"`
	// state is the slot's PSRDADA reader state (READER, READING, RSTOP, DISCON, ...).
	// +optional
	State string `json:"state,omitempty"`
	// lagBlocks are the blocks written that the slot has not opened yet.
	LagBlocks int32 `json:"lagBlocks"`
	// lagBytes is lagBlocks in bytes.
	LagBytes int64 `json:"lagBytes"`
	// lastAdvanceTime is when the slot last went past a block, as the receiver saw it.
	// +optional
	LastAdvanceTime *metav1.Time `json:"lastAdvanceTime,omitempty"`
}

// ObservationHeaderStatus holds the main keywords of an observation's PSRDADA header.
type ObservationHeaderStatus struct {
	// number is the observation's number since the receiver started (RINGCAP_OBSERVATION).
	// +optional
	Number *int64 `json:"number,omitempty"`
	// source is the header's SOURCE.
	// +optional
	Source string `json:"source,omitempty"`
	// utcStart is the header's UTC_START (YYYY-MM-DD-hh:mm:ss).
	// +optional
	UTCStart string `json:"utcStart,omitempty"`
	// utcStartSource says where UTC_START came from: sender (the sender's header
	// keywords), template (the receiver's header) or first-byte (when the
	// stream's first byte landed).
	// +optional
	UTCStartSource string `json:"utcStartSource,omitempty"`
	// telescope is the header's TELESCOPE.
	// +optional
	Telescope string `json:"telescope,omitempty"`
	// freq is the header's FREQ (MHz).
	// +optional
	Freq string `json:"freq,omitempty"`
	// bw is the header's BW (MHz).
	// +optional
	BW string `json:"bw,omitempty"`
}

// RunningStatus is the configuration of the running (or last) capture pod.
type RunningStatus struct {
	// generation is the RingCapture generation the pod was built from.
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// ringKey is the ring's key, as the receiver was given it.
	// +optional
	RingKey string `json:"ringKey,omitempty"`
	// blockBytes is the size of one ring block.
	// +optional
	BlockBytes int64 `json:"blockBytes,omitempty"`
	// blocks is the number of ring blocks.
	// +optional
	Blocks int64 `json:"blocks,omitempty"`
	// readers is the number of reader slots of the ring.
	// +optional
	Readers int32 `json:"readers,omitempty"`
	// queuePairs is the number of queue pairs the receiver accepts.
	// +optional
	QueuePairs int32 `json:"queuePairs,omitempty"`
	// mode is the transfer mode the receiver expects: Send or Write.
	// +optional
	Mode string `json:"mode,omitempty"`
	// messageBytes is the size of one RDMA message.
	// +optional
	MessageBytes int64 `json:"messageBytes,omitempty"`
	// port is the receiver's handshake port.
	// +optional
	Port int32 `json:"port,omitempty"`
	// stop is the receiver's stop condition, for example "after 1 observations".
	// +optional
	Stop string `json:"stop,omitempty"`
	// network is the network the receiver listens on: Pod, Host, or Attachment with
	// the attachment's name (and the interface when one was named).
	// +optional
	Network string `json:"network,omitempty"`
	// protocol is the packet protocol a UDP receiver takes in, SPEAD or VDIF; empty for
	// an RDMA receiver (transport says which).
	// +optional
	Protocol string `json:"protocol,omitempty"`
	// transport is the transport the receiver runs: Verbs or OFI (libfabric); empty for
	// a SPEAD or VDIF receiver.
	// +optional
	Transport string `json:"transport,omitempty"`
	// ofiProvider is the libfabric provider the receiver runs with transport OFI (empty
	// when the receiver has not reported it and none was given: then it is the device
	// plugin's or the first one libfabric offers).
	// +optional
	OFIProvider string `json:"ofiProvider,omitempty"`
	// transportSource says where transport and ofiProvider come from: the receiver's
	// own report, or the receiver's arguments when it has not reported them.
	// +optional
	TransportSource string `json:"transportSource,omitempty"`
	// allowedSenders is the receiver's sender allowlist as it was given: "any",
	// "listen-subnet" (the subnet of the address it listens on) or CIDRs.
	// +optional
	AllowedSenders string `json:"allowedSenders,omitempty"`
	// deviceClaimTemplate is the ResourceClaimTemplate the pod claims its RDMA device
	// from; empty when the device is the device plugin's extended resource.
	// +optional
	DeviceClaimTemplate string `json:"deviceClaimTemplate,omitempty"`
	// ipcLock says whether the receiver container has the IPC_LOCK capability (read from
	// the pod) and why the operator gave it or left it out.
	// +optional
	IPCLock *IPCLockStatus `json:"ipcLock,omitempty"`
	// deviceClaim is the ResourceClaim the pod's RDMA device came through (from the
	// pod's status.resourceClaimStatuses, once the claim exists).
	// +optional
	DeviceClaim string `json:"deviceClaim,omitempty"`
}

// IPCLockStatus is whether the receiver runs with IPC_LOCK, and why.
type IPCLockStatus struct {
	// granted is true when the receiver container has the IPC_LOCK capability.
	Granted bool `json:"granted"`
	// reason says why, for example "node n1 allows containers to lock 8 MiB, below the
	// 1.0 GiB the receiver registers".
	// +optional
	Reason string `json:"reason,omitempty"`
}

// RunSummary is what a finished run left.
type RunSummary struct {
	// generation is the RingCapture generation the run was built from.
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// phase is how the run ended: Succeeded or Failed; for an interrupted run (reason
	// RunInterrupted), the phase it was in when its pod was lost.
	// +optional
	Phase RingCapturePhase `json:"phase,omitempty"`
	// reason is the Failed condition's reason when the run failed, RunInterrupted when
	// its pod was lost mid-run.
	// +optional
	Reason string `json:"reason,omitempty"`
	// message says how the run ended (the failing container's message when it failed;
	// why and how its pod was lost when it was interrupted).
	// +optional
	Message string `json:"message,omitempty"`
	// bytesReceived is the number of bytes the run wrote into the ring.
	// +optional
	BytesReceived int64 `json:"bytesReceived,omitempty"`
	// observations is the number of observations that ended in the run.
	// +optional
	Observations int64 `json:"observations,omitempty"`
	// startTime is when the run's receiver started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime is when the run ended.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// EndpointStatus is where a sender connects.
type EndpointStatus struct {
	// address is the IP address the receiver listens on and a sender connects to: the
	// pod IP in Pod mode, the RDMA netdev's address in Host mode, the attachment
	// interface's address in Attachment mode.
	// +optional
	Address string `json:"address,omitempty"`
	// network is the network mode the address is on: Pod, Host or Attachment.
	// +optional
	Network string `json:"network,omitempty"`
	// reason says how the address was chosen and who can reach it.
	// +optional
	Reason string `json:"reason,omitempty"`
	// port is the handshake TCP port (RDMA).
	// +optional
	Port int32 `json:"port,omitempty"`
	// udpPorts are the UDP ports a SPEAD or VDIF receiver takes packets on (the pod's),
	// where senders send to address (or to the multicast groups).
	// +listType=atomic
	// +optional
	UDPPorts []int32 `json:"udpPorts,omitempty"`
	// multicastGroups are the groups a SPEAD or VDIF receiver joined, as it reports
	// them: senders send to them at udpPorts (reason says on which interface).
	// +listType=atomic
	// +optional
	MulticastGroups []string `json:"multicastGroups,omitempty"`
	// device is the RDMA device, for example rxe0.
	// +optional
	Device string `json:"device,omitempty"`
	// ibPort is the device port.
	// +optional
	IBPort int32 `json:"ibPort,omitempty"`
	// gidIndex is the GID index the receiver uses.
	// +optional
	GIDIndex *int32 `json:"gidIndex,omitempty"`
	// gid is the GID the receiver uses.
	// +optional
	GID string `json:"gid,omitempty"`
	// netdev is the network device the GID belongs to.
	// +optional
	Netdev string `json:"netdev,omitempty"`
}

// MemoryRegistrationStatus is how the receiver registered the ring with the device.
type MemoryRegistrationStatus struct {
	// mode is WholeRing or PerBlock (what Auto resolved to).
	// +optional
	Mode string `json:"mode,omitempty"`
	// regions is the number of registered memory regions.
	// +optional
	Regions int32 `json:"regions,omitempty"`
	// bytes is the number of registered bytes.
	// +optional
	Bytes int64 `json:"bytes,omitempty"`
	// reason says why this mode was chosen.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// RingCaptureList is a list of RingCaptures.
//
// +kubebuilder:object:root=true
type RingCaptureList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RingCapture `json:"items"`
}

func init() {
	SchemeBuilder.Register(&RingCapture{}, &RingCaptureList{})
}
