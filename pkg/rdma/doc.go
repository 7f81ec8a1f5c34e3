// Package rdma discovers RDMA devices from sysfs, in pure Go (no cgo, no libibverbs).
//
// Discover walks /sys/class/infiniband and returns every device with its ports, the
// ports' netdevs and GID tables (index, GID, type "RoCE v2" / "IB/RoCE v1", owning
// netdev; empty entries skipped) and the character devices that belong to it
// (/dev/infiniband/uverbsN matched exactly through infiniband_verbs/uverbsN/ibdev,
// rdma_cm, umadN/issmN). It works for PCI NICs and for software devices such as
// Soft-RoCE (rxe), which have no PCI parent. The sysfs and /dev roots are parameters
// (Roots), so tests run against trees under testdata/ — including one captured from
// real rxe devices in the Soft-RoCE VM by testdata/capture-sysfs.sh.
//
// A malformed or missing attribute never aborts discovery: the device, port or GID
// entry is left out and reported as a Skipped value with the reason.
//
// ChooseGID picks the GID a RoCE endpoint should use on a port under a GIDPolicy and
// says why; the device plugin puts the choice into each pod's environment and the
// receiver uses it (or re-resolves it against its listen address).
package rdma
