// Package v1alpha1 holds ringcap's Kubernetes API, group ringcap.io, version v1alpha1:
// RingCapture (one capture: a PSRDADA ring, an RDMA receiver and reader containers in
// one pod, run by the operator in cmd/operator) and RDMANode (a node's RDMA inventory,
// published by the device plugin).
//
// The types carry controller-gen markers; `make generate` writes the deepcopy code,
// the CRD YAML in config/crd/bases and the operator's RBAC in config/rbac. This package
// imports no controller code.
//
// +kubebuilder:object:generate=true
// +groupName=ringcap.io
package v1alpha1
