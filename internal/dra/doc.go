// Package dra is ringcap's Dynamic Resource Allocation driver (resource.k8s.io/v1,
// built on k8s.io/dynamic-resource-allocation's kubeletplugin helper): it publishes
// one ResourceSlice device per ACTIVE RDMA port of the node, with the port's
// attributes and the GID chosen under the device plugin's GID policy, and prepares
// claims with a CDI spec per claim giving the container exactly its uverbs device,
// rdma_cm and the same RINGCAP_* environment the device plugin gives. Discovery and
// GID choice are the device plugin's (pkg/rdma, internal/plugin).
package dra
