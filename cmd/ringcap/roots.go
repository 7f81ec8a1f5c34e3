package main

import (
	"github.com/ringcap/ringcap/pkg/rdma"
	"github.com/ringcap/ringcap/pkg/rdma/verbs"
)

// deviceRoots is where ringcap discovers RDMA devices: the host's sysfs, with each port's GID
// table from one verbs query (sysfs has a file per entry, 1024 a port on rxe).
func deviceRoots() rdma.Roots {
	r := rdma.DefaultRoots
	r.GIDTable = verbs.PortGIDs
	return r
}
