package dra

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
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
)

// PortDevice is one published device: an ACTIVE port of an RDMA device with its
// uverbs device, and the GID chosen under its pool's policy.
type PortDevice struct {
	Name      string // DNS label, unique in the node's pool
	Dev       rdma.Device
	Port      rdma.Port
	Pool      string
	Env       map[string]string // RINGCAP_* as the device plugin gives them
	GID       *rdma.GID         // nil: no GID matches the policy (EFA, InfiniBand without one)
	GIDReason string
	PCIeRoot  string // "pci0000:00"; empty without a PCI parent
}

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
// every device a config pool selects (the first such pool, whose GID policy applies),
// one PortDevice per ACTIVE port when the device has its uverbs device. Other ports
// are returned as LeftOut: a DOWN port is not allocatable (DRA device taints are alpha
// in Kubernetes 1.34, so it leaves the slice instead). Names are DNS labels
// ("mlx5-0-p1"), made unique with a hash of the device name when two would clash.
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
	var out []PortDevice
	var left []LeftOut
	used := map[string]bool{}
	for _, d := range sorted {
		pool, ok := poolOf[d.Name]
		if !ok {
			continue
		}
		for _, p := range d.Ports {
			if reason := notAllocatable(d, p); reason != "" {
				left = append(left, LeftOut{Device: d.Name, Port: p.Num, Reason: reason})
				continue
			}
			env, gid, reason := plugin.PortEnv(d, p, pool.GIDPolicy.Policy())
			name := deviceName(d.Name, p.Num, used)
			used[name] = true
			out = append(out, PortDevice{Name: name, Dev: d, Port: p, Pool: pool.Name, Env: env, GID: gid, GIDReason: reason, PCIeRoot: pcieRoots[d.Name]})
		}
	}
	return out, left, nil
}

func notAllocatable(d rdma.Device, p rdma.Port) string {
	switch {
	case d.UVerbs == "":
		return "no uverbs character device (is ib_uverbs loaded?)"
	case !p.Active():
		return fmt.Sprintf("port is %s (%s)", p.State, p.PhysState)
	}
	return ""
}

// deviceName is "<ibdev>-p<port>" as a DNS label: lower case, characters other than
// [a-z0-9-] replaced by '-'; when that is taken or too long, the label is shortened
// and given a hash of the device name.
func deviceName(ibdev string, port int, used map[string]bool) string {
	suffix := "-p" + strconv.Itoa(port)
	base := strings.Trim(strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '-'
	}, ibdev), "-")
	name := base + suffix
	if base != "" && !used[name] && len(validation.IsDNS1123Label(name)) == 0 {
		return name
	}
	sum := sha256.Sum256([]byte(ibdev))
	h := "-" + hex.EncodeToString(sum[:4])
	if limit := validation.DNS1123LabelMaxLength - len(h) - len(suffix); len(base) > limit {
		base = strings.TrimRight(base[:limit], "-")
	}
	if base == "" {
		base = "rdma"
	}
	return base + h + suffix
}

// Attributes are a PortDevice's ResourceSlice attributes; a string value longer than
// DRA allows (resourceapi.DeviceAttributeMaxValueLength) is left out.
func (p PortDevice) Attributes() map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	a := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
	str := func(name resourceapi.QualifiedName, v string) {
		if v != "" && len(v) <= resourceapi.DeviceAttributeMaxValueLength {
			a[name] = resourceapi.DeviceAttribute{StringValue: ptr.To(v)}
		}
	}
	num := func(name resourceapi.QualifiedName, v int64) {
		a[name] = resourceapi.DeviceAttribute{IntValue: ptr.To(v)}
	}
	q := func(id string) resourceapi.QualifiedName { return resourceapi.QualifiedName(AttrDomain + "/" + id) }
	str(q(AttrIBDev), p.Dev.Name)
	str(q(AttrDriver), p.Dev.Driver)
	num(q(AttrPort), int64(p.Port.Num))
	str(q(AttrLinkLayer), p.Port.LinkLayer)
	str(q(AttrState), p.Port.State)
	if p.Port.ActiveMTU > 0 {
		num(q(AttrMTU), int64(p.Port.ActiveMTU))
	}
	str(q(AttrNetdev), p.Netdev())
	str(q(AttrPool), p.Pool)
	str(q(AttrParent), p.Dev.Parent)
	if p.GID != nil {
		num(q(AttrGIDIndex), int64(p.GID.Index))
		str(q(AttrGID), p.Env[plugin.EnvGID])
		if p.Port.RoCE() {
			v, _ := strconv.Atoi(p.GID.RoCEVersion())
			num(q(AttrRoCEV), int64(v))
		}
	}
	if p.Dev.NUMANode >= 0 {
		num(q(AttrNUMANode), int64(p.Dev.NUMANode))
		num(deviceattribute.StandardDeviceAttributeNUMANode, int64(p.Dev.NUMANode))
	}
	str(deviceattribute.StandardDeviceAttributePCIeRoot, p.PCIeRoot)
	str(deviceattribute.StandardDeviceAttributePCIBusID, p.Dev.PCIAddress)
	return a
}

// Netdev is the chosen GID's netdev, else the port's own netdev, else "".
func (p PortDevice) Netdev() string {
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
