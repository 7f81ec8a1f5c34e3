package plugin

import (
	"fmt"
	"sort"
	"strconv"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/ringcap/ringcap/pkg/rdma"
)

// Environment variables Allocate sets in each container.
const (
	EnvDevice      = "RINGCAP_RDMA_DEVICE"  // the allocated device ("rxe0")
	EnvDevices     = "RINGCAP_RDMA_DEVICES" // every allocated device, comma-separated
	EnvPort        = "RINGCAP_RDMA_PORT"    // the port to use ("1")
	EnvGIDIndex    = "RINGCAP_GID_INDEX"    // the GID index chosen under the pool's policy
	EnvGID         = "RINGCAP_GID"          // that GID as an IP address
	EnvNetdev      = "RINGCAP_NETDEV"       // the netdev owning that GID
	EnvRoCEVersion = "RINGCAP_ROCE_VERSION" // "2" or "1"
	EnvGIDReason   = "RINGCAP_GID_REASON"   // why that GID (or why none)
	// Set for devices driven through libfabric (AWS EFA), which have no RoCE GID: the
	// transport, provider and domain `ringcap recv|send` use (--transport ofi
	// --ofi-provider efa --ofi-domain efa_0-rdm).
	EnvTransport   = "RINGCAP_TRANSPORT"    // "ofi"
	EnvOFIProvider = "RINGCAP_OFI_PROVIDER" // "efa"
	EnvOFIDomain   = "RINGCAP_OFI_DOMAIN"   // the device's libfabric domain ("efa_0-rdm")
)

// EFA devices are driven through libfabric's efa provider, whose reliable-datagram
// domain is named after the verbs device with the suffix "-rdm" (efa_0-rdm).
const (
	efaTransport    = "ofi"
	efaProvider     = "efa"
	efaDomainSuffix = "-rdm"
)

// devState is what the plugin knows about one device of a pool after a scan.
type devState struct {
	dev       rdma.Device
	port      rdma.Port // the port pods are told to use
	gid       *rdma.GID // nil when no GID matches the policy
	gidReason string
	healthy   bool
	reason    string // why unhealthy
}

// newDevState picks the port (the first ACTIVE one with a GID under the policy, else
// the first ACTIVE one, else the first) and the GID, and derives health: a device is
// healthy when it has its uverbs device and that port is ACTIVE. An EFA device gets no
// GID (it has no RoCE GID table; libfabric addresses it) and the first ACTIVE port.
func newDevState(d rdma.Device, pol rdma.GIDPolicy) devState {
	s := devState{dev: d, port: d.Ports[0]}
	if d.EFA() {
		s.port = firstActive(d.Ports)
		s.gidReason = fmt.Sprintf("EFA device: no RoCE GID is used; libfabric's %s provider addresses it (domain %s)", efaProvider, d.Name+efaDomainSuffix)
		return s.withHealth()
	}
	found := false
	for _, p := range d.Ports {
		if !p.Active() {
			continue
		}
		if g, reason, err := rdma.ChooseGID(p, pol); err == nil {
			s.port, s.gid, s.gidReason = p, &g, reason
			found = true
			break
		}
		if !s.port.Active() {
			s.port = p
		}
	}
	if !found {
		if g, reason, err := rdma.ChooseGID(s.port, pol); err == nil {
			s.gid, s.gidReason = &g, reason
		} else {
			s.gidReason = err.Error()
		}
	}
	return s.withHealth()
}

// firstActive is the first ACTIVE port, else the first port.
func firstActive(ports []rdma.Port) rdma.Port {
	for _, p := range ports {
		if p.Active() {
			return p
		}
	}
	return ports[0]
}

// withHealth derives health from the uverbs device and the chosen port.
func (s devState) withHealth() devState {
	switch {
	case s.dev.UVerbs == "":
		s.reason = "no uverbs character device (is ib_uverbs loaded?)"
	case !s.port.Active():
		s.reason = fmt.Sprintf("port %d is %s (%s)", s.port.Num, s.port.State, s.port.PhysState)
	default:
		s.healthy = true
	}
	return s
}

func (s devState) health() string {
	if s.healthy {
		return pluginapi.Healthy
	}
	return pluginapi.Unhealthy
}

// env is the container environment for this device.
func (s devState) env() map[string]string {
	e := map[string]string{
		EnvDevice:    s.dev.Name,
		EnvPort:      strconv.Itoa(s.port.Num),
		EnvGIDReason: s.gidReason,
	}
	for k, v := range OFIEnv(s.dev) {
		e[k] = v
	}
	if s.gid != nil {
		e[EnvGIDIndex] = strconv.Itoa(s.gid.Index)
		e[EnvGID] = gidString(s.gid)
		e[EnvNetdev] = s.gid.Netdev
		e[EnvRoCEVersion] = s.gid.RoCEVersion()
	}
	return e
}

// OFIEnv is the environment that tells a pod to drive the device through libfabric: for
// an EFA, the efa provider on the device's reliable-datagram domain; nil for other devices.
func OFIEnv(d rdma.Device) map[string]string {
	if !d.EFA() {
		return nil
	}
	return map[string]string{EnvTransport: efaTransport, EnvOFIProvider: efaProvider, EnvOFIDomain: d.Name + efaDomainSuffix}
}

func gidString(g *rdma.GID) string {
	if ip4 := g.GID.To4(); ip4 != nil {
		return ip4.String()
	}
	return g.GID.String()
}

// unit is one advertised device ID: the device itself (exclusive) or one of its
// MaxPodsPerDevice slots (shared, "rxe0-3").
type unit struct {
	id  string
	dev string
}

func unitsFor(pool Pool, dev string) []unit {
	if pool.Sharing.Mode != SharingShared {
		return []unit{{id: dev, dev: dev}}
	}
	out := make([]unit, pool.Sharing.MaxPodsPerDevice)
	for i := range out {
		out[i] = unit{id: dev + "-" + strconv.Itoa(i), dev: dev}
	}
	return out
}

// poolState is a pool's devices after a scan, and the ListAndWatch view of them.
type poolState struct {
	devs  map[string]devState // by device name
	units map[string]unit     // by unit ID
	list  []*pluginapi.Device // sorted by ID
}

func newPoolState(pool Pool, devs []rdma.Device) *poolState {
	ps := &poolState{devs: map[string]devState{}, units: map[string]unit{}}
	pol := pool.GIDPolicy.Policy()
	for _, d := range devs {
		s := newDevState(d, pol)
		ps.devs[d.Name] = s
		var topo *pluginapi.TopologyInfo
		if d.NUMANode >= 0 {
			topo = &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: int64(d.NUMANode)}}}
		}
		for _, u := range unitsFor(pool, d.Name) {
			ps.units[u.id] = u
			ps.list = append(ps.list, &pluginapi.Device{ID: u.id, Health: s.health(), Topology: topo})
		}
	}
	sort.Slice(ps.list, func(i, j int) bool { return ps.list[i].ID < ps.list[j].ID })
	return ps
}

// sameList reports whether two ListAndWatch views are equal (IDs, health, topology).
func sameList(a, b []*pluginapi.Device) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID || a[i].Health != b[i].Health || numa(a[i]) != numa(b[i]) {
			return false
		}
	}
	return true
}

func numa(d *pluginapi.Device) int64 {
	if d.Topology == nil || len(d.Topology.Nodes) == 0 {
		return -1
	}
	return d.Topology.Nodes[0].ID
}
