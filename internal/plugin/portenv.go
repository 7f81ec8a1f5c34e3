package plugin

import "github.com/ringcap/ringcap/pkg/rdma"

// PortEnv is the container environment the device plugin gives for port p of device
// d under the GID policy pol (the RINGCAP_* variables, without RINGCAP_RDMA_DEVICES),
// with the chosen GID (nil when none matches) and the reason for the choice. The DRA
// driver (internal/dra) hands out ports with it, so both paths name the same GID.
func PortEnv(d rdma.Device, p rdma.Port, pol rdma.GIDPolicy) (map[string]string, *rdma.GID, string) {
	s := devState{dev: d, port: p}
	if g, reason, err := rdma.ChooseGID(p, pol); err == nil {
		s.gid, s.gidReason = &g, reason
	} else {
		s.gidReason = err.Error()
	}
	return s.env(), s.gid, s.gidReason
}
