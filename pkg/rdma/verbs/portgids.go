package verbs

import (
	"fmt"

	"github.com/ringcap/ringcap/pkg/rdma"
)

// PortGIDs is an rdma.GIDTableFunc: the populated entries of one port's GID table from one
// ibv_query_gid_table on the opened device, where sysfs takes a file per entry. Netdevs are
// left to discovery (an entry's ifindex names an interface of the device's network namespace,
// which need not be the caller's).
func PortGIDs(dev string, port int) ([]rdma.GID, error) {
	c, err := Open(dev)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()
	tab, err := c.gidTable(port, false)
	if err != nil {
		return nil, err
	}
	out := make([]rdma.GID, 0, len(tab))
	for _, e := range tab {
		if e.Type < GIDTypeIB || e.Type > GIDTypeRoCEv2 {
			return nil, fmt.Errorf("GID %d of %s/%d: unknown type %v", e.Index, dev, port, e.Type)
		}
		out = append(out, rdma.GID{Index: e.Index, GID: e.GID, Type: e.Type.SysfsName()})
	}
	return out, nil
}
