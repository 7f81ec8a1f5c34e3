package devices

import (
	"github.com/ringcap/ringcap/pkg/rdma"
	"github.com/ringcap/ringcap/pkg/rdma/ofi"
	"github.com/ringcap/ringcap/pkg/rdma/verbs"
)

// HostRoots is where ringcap discovers RDMA devices: the host's sysfs, with
// each port's GID table from one verbs query (sysfs has a file per entry,
// 1024 a port on rxe).
func HostRoots() rdma.Roots {
	r := rdma.DefaultRoots
	r.GIDTable = verbs.PortGIDs
	return r
}

// CollectHost is Collect with this host's libfabric (ofi.Discover).
func CollectHost(roots rdma.Roots) (*Report, error) { return Collect(roots, ofi.Discover) }
