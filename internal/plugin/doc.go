// Package plugin is ringcap's kubelet device plugin (deviceplugin/v1beta1): it
// advertises the RDMA devices found by pkg/rdma as one extended resource per pool of
// the config file (ringcap.io/<pool>), with health from port state that recovers when
// the port comes back, rescans sysfs, hands each container exactly its allocated
// device's uverbsN and rdma_cm plus RINGCAP_* environment naming the device, port and
// GID to use, answers GetPreferredAllocation with NUMA-aware choices, re-registers when
// the kubelet restarts, and publishes the node's inventory (labels and an RDMANode
// object) and Prometheus metrics.
package plugin
