package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RDMANodeStatus is the RDMA inventory of one node, written by ringcap's device plugin.
type RDMANodeStatus struct {
	// devices are the node's RDMA devices as the plugin last discovered them.
	// +optional
	// +listType=map
	// +listMapKey=name
	Devices []RDMADevice `json:"devices,omitempty"`

	// pools are the extended resources the plugin advertises on this node.
	// +optional
	// +listType=map
	// +listMapKey=resource
	Pools []RDMAPool `json:"pools,omitempty"`

	// skipped lists devices, ports or GID entries discovery left out, with the reason
	// (a malformed or missing sysfs attribute).
	// +optional
	// +listType=atomic
	Skipped []string `json:"skipped,omitempty"`

	// lastScanTime is when the plugin last read sysfs and found a change (the object
	// is only written when something changed).
	// +optional
	LastScanTime *metav1.Time `json:"lastScanTime,omitempty"`

	// containerMemlock is the memlock limit (RLIMIT_MEMLOCK) the container runtime gives
	// containers on this node, as the plugin's own container has it: how much memory a
	// container without the IPC_LOCK capability may pin, and so register with an RDMA
	// device. The operator reads it to decide a capture's IPC_LOCK (receiver.ipcLock Auto).
	// +optional
	ContainerMemlock *MemlockLimit `json:"containerMemlock,omitempty"`

	// pluginVersion is the version of the plugin that wrote this status.
	// +optional
	PluginVersion string `json:"pluginVersion,omitempty"`

	// conditions: Ready is True when every advertised device is healthy.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// MemlockLimit is a memlock limit.
type MemlockLimit struct {
	// unlimited is true when there is no limit.
	// +optional
	Unlimited bool `json:"unlimited,omitempty"`
	// bytes is the limit in bytes when there is one.
	// +optional
	Bytes int64 `json:"bytes,omitempty"`
}

// RDMADevice is one RDMA device of a node.
type RDMADevice struct {
	// name is the kernel device name (mlx5_0, rxe0).
	// +required
	Name string `json:"name"`
	// nodeGUID is the device's node GUID as ibv_devinfo prints it.
	// +optional
	NodeGUID string `json:"nodeGUID,omitempty"`
	// nodeType is CA, RNIC, switch, router or unspecified (AWS EFA).
	// +optional
	NodeType string `json:"nodeType,omitempty"`
	// driver is the kernel driver (mlx5_core, rdma_rxe).
	// +optional
	Driver string `json:"driver,omitempty"`
	// pciAddress is the PCI function; empty for software devices such as Soft-RoCE.
	// +optional
	PCIAddress string `json:"pciAddress,omitempty"`
	// vendor is the PCI vendor ID ("0x15b3").
	// +optional
	Vendor string `json:"vendor,omitempty"`
	// deviceID is the PCI device ID ("0x1017").
	// +optional
	DeviceID string `json:"deviceID,omitempty"`
	// firmwareVersion is the device's firmware version.
	// +optional
	FirmwareVersion string `json:"firmwareVersion,omitempty"`
	// numaNode is the device's NUMA node; absent when unknown.
	// +optional
	NUMANode *int32 `json:"numaNode,omitempty"`
	// pool is the resource (ringcap.io/<pool>) the device is advertised under; empty
	// when no pool selects it.
	// +optional
	Pool string `json:"pool,omitempty"`
	// health is Healthy or Unhealthy, as advertised to the kubelet.
	// +optional
	Health string `json:"health,omitempty"`
	// healthReason says why a device is unhealthy.
	// +optional
	HealthReason string `json:"healthReason,omitempty"`
	// charDevices are the device's character devices (/dev/infiniband/uverbsN, ...).
	// +optional
	// +listType=atomic
	CharDevices []string `json:"charDevices,omitempty"`
	// ports are the device's ports.
	// +optional
	// +listType=map
	// +listMapKey=number
	Ports []RDMAPort `json:"ports,omitempty"`
}

// RDMAPort is one port of an RDMA device.
type RDMAPort struct {
	// number is the port number (from 1).
	// +required
	Number int32 `json:"number"`
	// state is the logical port state (ACTIVE, DOWN, ...).
	// +optional
	State string `json:"state,omitempty"`
	// physState is the physical state (LinkUp, Disabled, ...).
	// +optional
	PhysState string `json:"physState,omitempty"`
	// linkLayer is Ethernet (RoCE), InfiniBand or Unspecified (AWS EFA).
	// +optional
	LinkLayer string `json:"linkLayer,omitempty"`
	// activeMTU is the RoCE path MTU derived from the netdev MTU; 0 when unknown.
	// +optional
	ActiveMTU int32 `json:"activeMTU,omitempty"`
	// rate is the link rate as sysfs reports it.
	// +optional
	Rate string `json:"rate,omitempty"`
	// netdevs are the port's netdev, then upper devices (VLAN, macvlan) with GIDs.
	// +optional
	// +listType=atomic
	Netdevs []string `json:"netdevs,omitempty"`
	// gids are the populated entries of the port's GID table.
	// +optional
	// +listType=map
	// +listMapKey=index
	GIDs []RDMAGID `json:"gids,omitempty"`
	// chosenGIDIndex is the GID index pods are told to use (RINGCAP_GID_INDEX) under
	// the pool's GID policy; absent when no GID matches, and on EFA devices (libfabric
	// addresses them; pods get RINGCAP_TRANSPORT=ofi instead).
	// +optional
	ChosenGIDIndex *int32 `json:"chosenGIDIndex,omitempty"`
	// gidReason explains the choice, or why there is none.
	// +optional
	GIDReason string `json:"gidReason,omitempty"`
}

// RDMAGID is one populated GID table entry.
type RDMAGID struct {
	// index is the GID index.
	// +required
	Index int32 `json:"index"`
	// gid is the GID as an IP address (IPv4-mapped GIDs as IPv4).
	// +required
	GID string `json:"gid"`
	// type is "RoCE v2" or "IB/RoCE v1".
	// +optional
	Type string `json:"type,omitempty"`
	// netdev is the netdev owning the entry.
	// +optional
	Netdev string `json:"netdev,omitempty"`
}

// RDMAPool is one advertised extended resource.
type RDMAPool struct {
	// resource is the extended resource name (ringcap.io/rdma).
	// +required
	Resource string `json:"resource"`
	// sharing is exclusive or shared.
	// +optional
	Sharing string `json:"sharing,omitempty"`
	// units is the number of advertised units (devices, times maxPodsPerDevice when shared).
	// +optional
	Units int32 `json:"units,omitempty"`
	// healthyUnits is the number of healthy units.
	// +optional
	HealthyUnits int32 `json:"healthyUnits,omitempty"`
	// devices are the names of the pool's devices.
	// +optional
	// +listType=atomic
	Devices []string `json:"devices,omitempty"`
}

// RDMANode is the RDMA inventory of a node (name = node name), published by ringcap's
// device plugin: devices, ports, GID tables, the chosen GID index and health.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=rdman
// +kubebuilder:printcolumn:name="Devices",type=integer,JSONPath=`.status.pools[0].units`,description="units of the first pool"
// +kubebuilder:printcolumn:name="Healthy",type=integer,JSONPath=`.status.pools[0].healthyUnits`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RDMANode struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// status is the node's inventory.
	// +optional
	Status RDMANodeStatus `json:"status,omitempty"`
}

// RDMANodeList is a list of RDMANode.
//
// +kubebuilder:object:root=true
type RDMANodeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RDMANode `json:"items"`
}

func init() {
	SchemeBuilder.Register(&RDMANode{}, &RDMANodeList{})
}
