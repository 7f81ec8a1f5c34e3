package dra

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/dynamic-resource-allocation/deviceattribute"
	"k8s.io/utils/ptr"

	"github.com/ringcap/ringcap/internal/plugin"
	"github.com/ringcap/ringcap/pkg/rdma"
)

// DriverName is the DRA driver's name (ResourceSlice spec.driver, DeviceClass CEL
// `device.driver`).
const DriverName = "rdma.ringcap.io"

// AttrDomain is the domain of ringcap's device attributes: in CEL,
// device.attributes["ringcap.io"].gid.
const AttrDomain = "ringcap.io"

// Attribute names (under AttrDomain).
const (
	AttrIBDev     = "ibdev"     // RDMA device ("mlx5_0", "rxe1")
	AttrDriver    = "driver"    // kernel driver ("mlx5_core", "rdma_rxe")
	AttrPort      = "port"      // port number (int)
	AttrLinkLayer = "linkLayer" // "Ethernet" or "InfiniBand"
	AttrState     = "state"     // port state (only ACTIVE ports are published)
	AttrMTU       = "mtu"       // RoCE path MTU (int), when sysfs gives it
	AttrNetdev    = "netdev"    // netdev of the chosen GID, else the port's netdev
	AttrRoCEV     = "rocev"     // RoCE version of the chosen GID (int 1 or 2)
	AttrGIDIndex  = "gidIndex"  // chosen GID index (int)
	AttrGID       = "gid"       // chosen GID as an IP address
	AttrNUMANode  = "numaNode"  // NUMA node (int), when known
	AttrPool      = "pool"      // the config pool that selects the device
	AttrParent    = "parent"    // netdev a software device (rxe, siw) is bound to
	AttrPorts     = "ports"     // ACTIVE ports of a multi-port device (int)
)

// PortDevice is one published device: an RDMA device a pool selects, with its uverbs
// device. A device with one port is published as that port while it is ACTIVE
// ("mlx5-0-p1"); a device with several ports is published once ("mlx4-0") while at
// least one of them is ACTIVE, so a claim always holds the whole device (its one uverbs
// device), as the device plugin allocates it. The embedded PortChoice is the primary
// port: the one the container's RINGCAP_* environment names.
type PortDevice struct {
	Name string // DNS label, unique in the node's pool
	Dev  rdma.Device
	PortChoice
	Pool     string
	PCIeRoot string // "pci0000:00"; empty without a PCI parent
	// Ports are every ACTIVE port of a multi-port device in port order, the primary
	// one among them; nil for a single-port device.
	Ports []PortChoice
}

// PortChoice is an ACTIVE port with the GID chosen for it under its pool's policy.
type PortChoice struct {
	Port      rdma.Port
	Env       map[string]string // RINGCAP_* as the device plugin gives them for this port
	GID       *rdma.GID         // nil: no GID matches the policy (EFA, InfiniBand without one)
	GIDReason string
}

// MultiPort reports whether the device has several ports (and is published once).
func (p PortDevice) MultiPort() bool { return len(p.Dev.Ports) > 1 }

// LeftOut is a port not published, with the reason.
type LeftOut struct {
	Device string
	Port   int
	Reason string
}

func (l LeftOut) String() string {
	return fmt.Sprintf("device %s port %d: %s", l.Device, l.Port, l.Reason)
}

// PCIeRoots returns the PCIe root complex ("pci0000:00") of every device with a PCI
// parent, read from the device's sysfs path under sys; devices without one are absent.
func PCIeRoots(sys string, devs []rdma.Device) map[string]string {
	out := map[string]string{}
	for _, d := range devs {
		if d.PCIAddress == "" {
			continue
		}
		p, err := filepath.EvalSymlinks(filepath.Join(sys, "class", "infiniband", d.Name, "device"))
		if err != nil {
			continue
		}
		if root := pcieRootOf(sys, p); root != "" {
			out[d.Name] = root
		}
	}
	return out
}

// pcieRootOf is the first component after devices/ of a resolved PCI device path
// when it names a root complex ("pci0000:00").
func pcieRootOf(sys, path string) string {
	sysAbs, err := filepath.EvalSymlinks(sys)
	if err != nil {
		return ""
	}
	rel, err := filepath.Rel(sysAbs, path)
	if err != nil {
		return ""
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if len(parts) < 3 || parts[0] != "devices" || !strings.HasPrefix(parts[1], "pci") {
		return ""
	}
	return parts[1]
}

// PortDevices is the node's published devices as a pure function of discovery: for
// every device a config pool selects (the first such pool, whose GID policy applies)
// that has its uverbs device, one PortDevice per ACTIVE port of a single-port device and
// one per multi-port device with an ACTIVE port. Other ports are returned as LeftOut: a
// DOWN port is not allocatable (DRA device taints are alpha in Kubernetes 1.34, so it
// leaves the slice instead). Names come from deviceName; a device whose name another
// discovered device (earlier by ibdev name) already has is left out.
func PortDevices(cfg *plugin.Config, devs []rdma.Device, pcieRoots map[string]string) ([]PortDevice, []LeftOut, error) {
	assigned, err := cfg.Assign(devs)
	if err != nil {
		return nil, nil, fmt.Errorf("assign devices to pools: %w", err)
	}
	poolOf := map[string]plugin.Pool{}
	for i := len(cfg.Pools) - 1; i >= 0; i-- { // the first pool wins
		for _, d := range assigned[cfg.Pools[i].Name] {
			poolOf[d.Name] = cfg.Pools[i]
		}
	}
	sorted := append([]rdma.Device(nil), devs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	clash := nameClashes(sorted)
	var out []PortDevice
	var left []LeftOut
	for _, d := range sorted {
		pool, ok := poolOf[d.Name]
		if !ok {
			continue
		}
		active, l := allocatablePorts(d, clash[d.Name], pool.GIDPolicy.Policy())
		left = append(left, l...)
		if len(active) == 0 {
			continue
		}
		pd := PortDevice{Name: deviceName(d), Dev: d, PortChoice: active[0], Pool: pool.Name, PCIeRoot: pcieRoots[d.Name]}
		if pd.MultiPort() {
			pd.PortChoice, pd.Ports = primary(active), active
		}
		out = append(out, pd)
	}
	return out, left, nil
}

// allocatablePorts are the device's ACTIVE ports with their GIDs, and the others with
// the reason they are not published (every port, when the device is not allocatable).
func allocatablePorts(d rdma.Device, clash string, pol rdma.GIDPolicy) ([]PortChoice, []LeftOut) {
	var active []PortChoice
	var left []LeftOut
	for _, p := range d.Ports {
		if reason := notAllocatable(d, p, clash); reason != "" {
			left = append(left, LeftOut{Device: d.Name, Port: p.Num, Reason: reason})
			continue
		}
		env, gid, reason := plugin.PortEnv(d, p, pol)
		active = append(active, PortChoice{Port: p, Env: env, GID: gid, GIDReason: reason})
	}
	return active, left
}

// primary is the port a multi-port device's claim is told to use, chosen as the device
// plugin chooses it: the first ACTIVE port with a GID under the policy, else the first
// ACTIVE port.
func primary(active []PortChoice) PortChoice {
	for _, c := range active {
		if c.GID != nil {
			return c
		}
	}
	return active[0]
}

func notAllocatable(d rdma.Device, p rdma.Port, clash string) string {
	switch {
	case clash != "":
		return fmt.Sprintf("device name %s is already %s's", deviceName(d), clash)
	case d.UVerbs == "":
		return "no uverbs character device (is ib_uverbs loaded?)"
	case !p.Active():
		return fmt.Sprintf("port is %s (%s)", p.State, p.PhysState)
	}
	return ""
}

// nameClashes maps each discovered device (sorted by name) whose deviceName an earlier
// one has to that earlier device. deviceName keeps names apart (see there), so this
// only happens when two hashes collide; port states play no part.
func nameClashes(sorted []rdma.Device) map[string]string {
	owner := map[string]string{}
	out := map[string]string{}
	for _, d := range sorted {
		n := deviceName(d)
		if o, ok := owner[n]; ok {
			out[d.Name] = o
			continue
		}
		owner[n] = d.Name
	}
	return out
}

// deviceName is a device's name in the ResourceSlice, a pure function of the device's
// name and port count: "<ibdev>-p<port>" for a single-port device, "<ibdev>" for a
// multi-port one, with '_' written as '-' ("mlx5-0-p1", "mlx4-0"). An ibdev name that is
// not of the kernel's kind (lower-case letters and digits in '_'-separated parts, the
// last part neither "p<digits>" nor eight hex digits, short enough) gets a hash of the
// ibdev name before the port suffix ("rxe-a-1b2c3d4e-p1"), shortened to fit a DNS label.
// No other device's name or port state plays a part, so names never move between
// devices; the rules keep every kernel-kind name apart from every hashed name and
// single-port names apart from multi-port ones.
func deviceName(d rdma.Device) string {
	suffix := ""
	if len(d.Ports) == 1 {
		suffix = "-p" + strconv.Itoa(d.Ports[0].Num)
	}
	if kernelName(d.Name, suffix) {
		return strings.ReplaceAll(d.Name, "_", "-") + suffix
	}
	base := strings.Trim(strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '-'
	}, d.Name), "-")
	sum := sha256.Sum256([]byte(d.Name))
	h := "-" + hex.EncodeToString(sum[:4])
	if limit := validation.DNS1123LabelMaxLength - len(h) - len(suffix); len(base) > limit {
		base = strings.TrimRight(base[:limit], "-")
	}
	if base == "" {
		base = "rdma"
	}
	return base + h + suffix
}

var (
	kernelNameRE = regexp.MustCompile(`^[a-z0-9]+(_[a-z0-9]+)*$`)
	portPartRE   = regexp.MustCompile(`^p[0-9]+$`)
	hashPartRE   = regexp.MustCompile(`^[0-9a-f]{8}$`)
)

// kernelName reports whether an ibdev name is published as it is (with '_' as '-'):
// see deviceName.
func kernelName(ibdev, suffix string) bool {
	if !kernelNameRE.MatchString(ibdev) || len(ibdev)+len(suffix) > validation.DNS1123LabelMaxLength {
		return false
	}
	last := ibdev[strings.LastIndex(ibdev, "_")+1:]
	return !portPartRE.MatchString(last) && !hashPartRE.MatchString(last)
}

// Attributes are a PortDevice's ResourceSlice attributes: the device's, its primary
// port's, and for a multi-port device the number of ACTIVE ports and per-port
// attributes of the first maxDescribedPorts of them. A string value longer than DRA
// allows (resourceapi.DeviceAttributeMaxValueLength) is left out.
func (p PortDevice) Attributes() map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	a := attrs{}
	a.str(AttrIBDev, p.Dev.Name)
	a.str(AttrDriver, p.Dev.Driver)
	a.num(AttrPort, int64(p.Port.Num))
	a.str(AttrLinkLayer, p.Port.LinkLayer)
	a.str(AttrState, p.Port.State)
	if p.Port.ActiveMTU > 0 {
		a.num(AttrMTU, int64(p.Port.ActiveMTU))
	}
	a.str(AttrNetdev, p.Netdev())
	a.str(AttrPool, p.Pool)
	a.str(AttrParent, p.Dev.Parent)
	a.gid(p.PortChoice, AttrGIDIndex, AttrGID, AttrRoCEV)
	if p.MultiPort() {
		a.num(AttrPorts, int64(len(p.Ports)))
		for _, c := range p.Ports[:min(len(p.Ports), maxDescribedPorts)] {
			a.port(c)
		}
	}
	if p.Dev.NUMANode >= 0 {
		a.num(AttrNUMANode, int64(p.Dev.NUMANode))
		a[deviceattribute.StandardDeviceAttributeNUMANode] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(p.Dev.NUMANode))}
	}
	a.std(deviceattribute.StandardDeviceAttributePCIeRoot, p.PCIeRoot)
	a.std(deviceattribute.StandardDeviceAttributePCIBusID, p.Dev.PCIAddress)
	return a
}

// maxDescribedPorts is how many ports of a multi-port device get per-port attributes:
// with every other attribute present, three ports fill DRA's 32 attributes a device.
const maxDescribedPorts = 3

// attrs builds a device's attributes; names without a domain are under AttrDomain.
type attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute

func (a attrs) std(name resourceapi.QualifiedName, v string) {
	if v != "" && len(v) <= resourceapi.DeviceAttributeMaxValueLength {
		a[name] = resourceapi.DeviceAttribute{StringValue: ptr.To(v)}
	}
}

func (a attrs) str(id, v string) { a.std(resourceapi.QualifiedName(AttrDomain+"/"+id), v) }

func (a attrs) num(id string, v int64) {
	a[resourceapi.QualifiedName(AttrDomain+"/"+id)] = resourceapi.DeviceAttribute{IntValue: ptr.To(v)}
}

// gid sets a port's chosen GID attributes under the given ids, when it has one.
func (a attrs) gid(c PortChoice, index, gid, rocev string) {
	if c.GID == nil {
		return
	}
	a.num(index, int64(c.GID.Index))
	a.str(gid, c.Env[plugin.EnvGID])
	if c.Port.RoCE() {
		v, _ := strconv.Atoi(c.GID.RoCEVersion())
		a.num(rocev, int64(v))
	}
}

// port sets a multi-port device's per-port attributes, "p<port><Attr>" ("p2Netdev").
func (a attrs) port(c PortChoice) {
	id := func(attr string) string {
		return "p" + strconv.Itoa(c.Port.Num) + strings.ToUpper(attr[:1]) + attr[1:]
	}
	a.str(id(AttrLinkLayer), c.Port.LinkLayer)
	a.str(id(AttrNetdev), c.Netdev())
	a.gid(c, id(AttrGIDIndex), id(AttrGID), id(AttrRoCEV))
}

// Netdev is the chosen GID's netdev, else the port's own netdev, else "".
func (p PortChoice) Netdev() string {
	if p.GID != nil && p.GID.Netdev != "" {
		return p.GID.Netdev
	}
	if len(p.Port.Netdevs) > 0 {
		return p.Port.Netdevs[0]
	}
	return ""
}

// APIDevice is the ResourceSlice entry of a PortDevice.
func (p PortDevice) APIDevice() resourceapi.Device {
	return resourceapi.Device{Name: p.Name, Attributes: p.Attributes()}
}

// Slices splits the devices into ResourceSlices of at most
// resourceapi.ResourceSliceMaxDevices each (at least one, possibly empty, so an
// empty node still publishes its pool).
func Slices(devs []PortDevice) [][]resourceapi.Device {
	out := [][]resourceapi.Device{{}}
	for _, d := range devs {
		last := len(out) - 1
		if len(out[last]) == resourceapi.ResourceSliceMaxDevices {
			out = append(out, nil)
			last++
		}
		out[last] = append(out[last], d.APIDevice())
	}
	return out
}

// scan discovers the devices under roots and builds the PortDevices; the ports of a
// device the device plugin's config (other, nil: none) selects too are left out.
func scan(cfg, other *plugin.Config, roots rdma.Roots) ([]PortDevice, []LeftOut, []rdma.Skipped, error) {
	all, skipped, err := rdma.Discover(roots)
	if err != nil {
		return nil, nil, nil, err
	}
	ov := cfg.Overlaps(other, all)
	devs := plugin.WithoutOverlaps(all, ov)
	pds, left, err := PortDevices(cfg, devs, PCIeRoots(roots.Sys, devs))
	return pds, append(left, overlapsLeftOut(all, ov)...), skipped, err
}
