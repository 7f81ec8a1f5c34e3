package v1alpha1

// NetworkMode is the network the capture pod's receiver listens on.
// +kubebuilder:validation:Enum=Pod;Host;Attachment
type NetworkMode string

const (
	// NetworkModePod listens on the pod's IP on the cluster network. Senders in the
	// cluster reach it; a machine outside reaches it only where the cluster routes pod
	// IPs.
	NetworkModePod NetworkMode = "Pod"
	// NetworkModeHost runs the pod in the node's network namespace (hostNetwork) and
	// listens on the address of the RDMA netdev whose RoCE v2 GID the receiver uses:
	// the data network a digitiser outside the cluster sits on.
	NetworkModeHost NetworkMode = "Host"
	// NetworkModeAttachment gives the pod a secondary interface from a
	// NetworkAttachmentDefinition (the k8s.v1.cni.cncf.io/networks annotation, which
	// Multus or another meta-plugin honours) and listens on that interface, with the
	// RoCE v2 GID of its own address.
	NetworkModeAttachment NetworkMode = "Attachment"
)

// AnnotationNetworks is the standard annotation that asks a CNI meta-plugin (Multus)
// for secondary interfaces.
const AnnotationNetworks = "k8s.v1.cni.cncf.io/networks"

// AnnotationNetworkStatus is the standard annotation in which a CNI meta-plugin
// reports the pod's interfaces and their addresses.
const AnnotationNetworkStatus = "k8s.v1.cni.cncf.io/network-status"

// Condition type and reasons of the capture's network.
const (
	// ConditionExternallyReachable: the endpoint is on a network a sender outside the
	// cluster can reach (Host or Attachment mode). False with reason ClusterInternal in
	// Pod mode, whose endpoint is the pod IP.
	ConditionExternallyReachable = "ExternallyReachable"

	// ReasonClusterInternal: Pod mode; status.endpoint.address is the pod IP.
	ReasonClusterInternal = "ClusterInternal"
	// ReasonHostNetwork: Host mode; the receiver listens on the RDMA netdev's address.
	ReasonHostNetwork = "HostNetwork"
	// ReasonAttachmentNetwork: Attachment mode; the receiver listens on the
	// attachment's interface.
	ReasonAttachmentNetwork = "AttachmentNetwork"
	// ReasonEndpointNotChosen: the receiver has not reported the address it listens on.
	ReasonEndpointNotChosen = "EndpointNotChosen"
	// ReasonHostPortInUse: Host mode; the scheduler found no node where the capture's
	// receiver.port and receiver.metricsPort are free.
	ReasonHostPortInUse = "HostPortInUse"
)

// NetworkSpec is where the receiver listens and who may send to it.
//
// +kubebuilder:validation:XValidation:rule="(self.mode == 'Attachment') == has(self.attachment)",message="network.attachment must be set exactly when network.mode is Attachment (it names the NetworkAttachmentDefinition of the pod's interface on the data network)",fieldPath=".attachment"
// +kubebuilder:validation:XValidation:rule="self.mode == 'Attachment' || !has(self.interface)",message="network.interface applies only in Attachment mode (in Host mode the receiver listens on the netdev of its RDMA device's GID; in Pod mode on the pod's eth0)",fieldPath=".interface"
type NetworkSpec struct {
	// mode is the network the receiver listens on: Pod (the pod IP on the cluster
	// network), Host (the node's network namespace: the address of the RDMA netdev the
	// receiver's RoCE v2 GID belongs to) or Attachment (a secondary interface from a
	// NetworkAttachmentDefinition, with RoCE GIDs of its own).
	// +kubebuilder:default=Pod
	// +optional
	Mode NetworkMode `json:"mode,omitempty"`

	// attachment names the NetworkAttachmentDefinition of the pod's data-network
	// interface, "name" (in the RingCapture's namespace) or "namespace/name"; the pod
	// carries it in the k8s.v1.cni.cncf.io/networks annotation. Only in Attachment mode.
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	Attachment string `json:"attachment,omitempty"`

	// interface is the pod's interface the receiver listens on in Attachment mode; by
	// default the attachment's interface as the network-status annotation reports it,
	// else net1.
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_][-A-Za-z0-9_.]*$`
	// +optional
	Interface string `json:"interface,omitempty"`

	// allowedSenders are the networks (CIDRs, for example 198.18.0.0/24 or
	// 198.18.0.7/32) senders may connect from; the receiver refuses any other at the
	// TCP handshake, with a message saying so, and counts it in
	// ringcap_recv_refused_senders_total. Empty: in Pod mode any sender; in Host and
	// Attachment mode only senders on the subnet of the address the receiver listens on.
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +optional
	AllowedSenders []CIDR `json:"allowedSenders,omitempty"`
}

// CIDR is an IPv4 or IPv6 network in CIDR notation, such as 198.18.0.0/24.
// +kubebuilder:validation:MaxLength=43
// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="network.allowedSenders entries must be CIDRs such as 198.18.0.0/24 (write 198.18.0.7/32 for one address)"
type CIDR string
