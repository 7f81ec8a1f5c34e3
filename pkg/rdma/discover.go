package rdma

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// Roots are the filesystem roots discovery reads: "/sys" and "/dev" in production,
// trees under a temporary or testdata directory in tests. The device paths returned
// (Device.CharDevices and friends) are always the canonical host paths under /dev;
// Dev is only used to check that they exist.
type Roots struct {
	Sys string
	Dev string
	// GIDTable, when set, reads a port's populated GID entries (index, GID, type) in one
	// query instead of sysfs's file per entry (rxe has 1024 a port, an open and reads each:
	// most of a receiver's start-up under emulation). Netdevs still come from sysfs, for the
	// populated entries only. An error falls back to sysfs.
	GIDTable GIDTableFunc
}

// GIDTableFunc reads the populated entries of one port's GID table (verbs.PortGIDs).
type GIDTableFunc func(dev string, port int) ([]GID, error)

// DefaultRoots are the production roots.
var DefaultRoots = Roots{Sys: "/sys", Dev: "/dev"}

// Device is one RDMA device (an entry of /sys/class/infiniband).
type Device struct {
	Name            string // e.g. "mlx5_0", "rxe0"
	NodeGUID        string // "f845:ecff:fe54:98f8", as ibv_devinfo prints it
	NodeType        string // "CA", "switch", "router", "RNIC", ...
	Driver          string // kernel driver: "mlx5_core" (PCI), "rdma_rxe" (Soft-RoCE), ...
	PCIAddress      string // "0000:03:00.0"; empty for software devices
	Vendor          string // PCI vendor ID, "0x15b3"; empty without PCI parent
	DeviceID        string // PCI device ID, "0x1017"; empty without PCI parent
	FirmwareVersion string // fw_ver; empty when the device has none
	NUMANode        int    // -1 when unknown or not NUMA
	// Parent is the netdev a software device (rxe, siw) is bound to ("parent").
	Parent string
	Ports  []Port
	// CharDevices are every character device that belongs to the device: its
	// uverbs device, umad/issm devices, and the node-wide rdma_cm.
	CharDevices []string
	UVerbs      string   // "/dev/infiniband/uverbs0"; empty when missing
	UMad        []string // "/dev/infiniband/umad0", one per port where present
	ISSM        []string // "/dev/infiniband/issm0", one per port where present
	RDMACM      string   // "/dev/infiniband/rdma_cm" when present
}

// Port is one port of a device.
type Port struct {
	Num       int
	State     string // "ACTIVE", "DOWN", "INIT", "ARMED", "ACTIVE_DEFER"
	PhysState string // "LinkUp", "Disabled", "Polling", ...
	LinkLayer string // "Ethernet" (RoCE), "InfiniBand" or "Unspecified" (EFA)
	// ActiveMTU is the RoCE path MTU derived from the netdev MTU as the kernel does
	// (largest IB MTU that fits the netdev MTU minus RoCE headers); 0 when it cannot
	// be derived from sysfs (InfiniBand ports, no netdev).
	ActiveMTU int
	Rate      string   // "100 Gb/sec (4X EDR)"
	Netdevs   []string // the port's netdev first, then upper devices seen in the GID table
	GIDs      []GID    // populated GID entries, by index
}

// Active reports whether the port is in the ACTIVE state.
func (p Port) Active() bool { return p.State == "ACTIVE" }

// parseLinkLayer checks a port's link_layer: Ethernet, InfiniBand, or the "Unknown"
// sysfs prints for IB_LINK_LAYER_UNSPECIFIED (EFA), reported as LinkLayerUnspecified.
func parseLinkLayer(s string) (string, error) {
	switch s {
	case LinkLayerEthernet, LinkLayerInfiniBand, LinkLayerUnspecified:
		return s, nil
	case "Unknown":
		return LinkLayerUnspecified, nil
	}
	return "", fmt.Errorf("unknown link layer %q", trunc(s))
}

// RoCE reports whether the port's link layer is Ethernet.
func (p Port) RoCE() bool { return p.LinkLayer == LinkLayerEthernet }

// EFA reports whether the device is an AWS Elastic Fabric Adapter (driver efa): it has
// no RC queue pairs and no RoCE GIDs and is driven through libfabric's efa provider.
func (d Device) EFA() bool { return d.Driver == DriverEFA }

// DriverEFA is the kernel driver of AWS Elastic Fabric Adapters.
const DriverEFA = "efa"

// GID is one populated entry of a port's GID table.
type GID struct {
	Index  int
	GID    net.IP // 16 bytes
	Type   string // GIDTypeRoCEv2 or GIDTypeRoCEv1 (InfiniBand ports report the latter)
	Netdev string // owning netdev; empty on InfiniBand ports
}

// Link layers and GID types as sysfs spells them. LinkLayerUnspecified is a port
// whose driver names no link layer (AWS EFA): sysfs prints it as "Unknown",
// ibv_devinfo as "Unspecified", the word discovery reports.
const (
	LinkLayerEthernet    = "Ethernet"
	LinkLayerInfiniBand  = "InfiniBand"
	LinkLayerUnspecified = "Unspecified"
	GIDTypeRoCEv2        = "RoCE v2"
	GIDTypeRoCEv1        = "IB/RoCE v1"
)

// RoCEVersion returns "2" for RoCE v2 GIDs and "1" for IB/RoCE v1 ones.
func (g GID) RoCEVersion() string {
	if g.Type == GIDTypeRoCEv2 {
		return "2"
	}
	return "1"
}

// IPv4 reports whether the GID is an IPv4-mapped address (::ffff:a.b.c.d).
func (g GID) IPv4() bool { return isV4Mapped(g.GID) }

// Skipped is a device, port or GID entry discovery left out, with the reason.
type Skipped struct {
	Device string
	Port   int    // 0 for a whole device
	Attr   string // the attribute path relative to the sysfs root, when one is to blame
	Reason string
}

func (s Skipped) String() string {
	what := "device " + s.Device
	if s.Port > 0 {
		what += " port " + strconv.Itoa(s.Port)
	}
	if s.Attr != "" {
		return fmt.Sprintf("%s: %s (%s)", what, s.Reason, s.Attr)
	}
	return what + ": " + s.Reason
}

const (
	classIB    = "class/infiniband"
	classVerbs = "class/infiniband_verbs"
	classMad   = "class/infiniband_mad"
	classNet   = "class/net"
)

// Discover lists the RDMA devices under r.Sys, sorted by name. Devices, ports and GID
// entries with malformed or missing attributes are left out and returned as Skipped.
// An error is returned only when the class directory exists but cannot be read; no
// class directory (no RDMA modules loaded) means no devices.
func Discover(r Roots) ([]Device, []Skipped, error) {
	d := discoverer{r: r}
	ents, err := os.ReadDir(filepath.Join(r.Sys, classIB))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list RDMA devices: %w", err)
	}
	uverbs := d.charIndex(classVerbs, false)
	mads := d.charIndex(classMad, true)
	var rdmaCM string
	if d.devExists("infiniband/rdma_cm") {
		rdmaCM = "/dev/infiniband/rdma_cm"
	}
	var devs []Device
	for _, e := range ents {
		dev, ok := d.device(e.Name())
		if !ok {
			continue
		}
		if u, ok := uverbs[key{dev.Name, 0}]; ok && len(u) > 0 {
			dev.UVerbs = u[0]
		}
		for _, p := range dev.Ports {
			for _, c := range mads[key{dev.Name, p.Num}] {
				if strings.Contains(c, "/issm") {
					dev.ISSM = append(dev.ISSM, c)
				} else {
					dev.UMad = append(dev.UMad, c)
				}
			}
		}
		dev.RDMACM = rdmaCM
		if dev.UVerbs != "" {
			dev.CharDevices = append(dev.CharDevices, dev.UVerbs)
		}
		dev.CharDevices = append(dev.CharDevices, dev.UMad...)
		dev.CharDevices = append(dev.CharDevices, dev.ISSM...)
		if rdmaCM != "" {
			dev.CharDevices = append(dev.CharDevices, rdmaCM)
		}
		devs = append(devs, dev)
	}
	sort.Slice(devs, func(i, j int) bool { return devs[i].Name < devs[j].Name })
	return devs, d.skipped, nil
}

type key struct {
	dev  string
	port int
}

type discoverer struct {
	r       Roots
	skipped []Skipped
}

func (d *discoverer) skip(dev string, port int, attr, format string, args ...any) {
	d.skipped = append(d.skipped, Skipped{Device: dev, Port: port, Attr: attr, Reason: fmt.Sprintf(format, args...)})
}

func (d *discoverer) sys(rel ...string) string {
	return filepath.Join(append([]string{d.r.Sys}, rel...)...)
}

func (d *discoverer) devExists(rel string) bool {
	_, err := os.Stat(filepath.Join(d.r.Dev, rel))
	return err == nil
}

// charIndex maps (ibdev, port) to the /dev/infiniband paths of a char-device class
// (infiniband_verbs: port 0; infiniband_mad: umadN and issmN per port). Entries whose
// ibdev cannot be read or whose node is missing under the /dev root are ignored.
func (d *discoverer) charIndex(class string, perPort bool) map[key][]string {
	out := map[key][]string{}
	ents, err := os.ReadDir(d.sys(class))
	if err != nil {
		return out
	}
	for _, e := range ents {
		name := e.Name()
		if !charDevName.MatchString(name) {
			continue // abi_version and friends
		}
		ibdev, err := readAttr(d.sys(class, name, "ibdev"))
		if err != nil || ibdev == "" {
			continue
		}
		k := key{dev: ibdev}
		if perPort {
			s, err := readAttr(d.sys(class, name, "port"))
			if err != nil {
				continue
			}
			if k.port, err = strconv.Atoi(s); err != nil {
				continue
			}
		}
		if !d.devExists("infiniband/" + name) {
			continue
		}
		out[k] = append(out[k], "/dev/infiniband/"+name)
	}
	for k := range out {
		sort.Slice(out[k], func(i, j int) bool { return charLess(out[k][i], out[k][j]) })
	}
	return out
}

var charDevName = regexp.MustCompile(`^(uverbs|umad|issm)[0-9]+$`)

// charLess orders uverbs2 before uverbs10.
func charLess(a, b string) bool {
	ta, na := splitNum(a)
	tb, nb := splitNum(b)
	if ta != tb {
		return ta < tb
	}
	return na < nb
}

func splitNum(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	n, _ := strconv.Atoi(s[i:])
	return s[:i], n
}

func (d *discoverer) device(name string) (Device, bool) {
	dev := Device{Name: name, NUMANode: -1}
	base := d.sys(classIB, name)
	rel := filepath.Join(classIB, name)

	s, err := readAttr(filepath.Join(base, "node_guid"))
	if err != nil {
		d.skip(name, 0, filepath.Join(rel, "node_guid"), "read node GUID: %v", err)
		return dev, false
	}
	if dev.NodeGUID, err = parseGUID(s); err != nil {
		d.skip(name, 0, filepath.Join(rel, "node_guid"), "parse node GUID: %v", err)
		return dev, false
	}
	s, err = readAttr(filepath.Join(base, "node_type"))
	if err != nil {
		d.skip(name, 0, filepath.Join(rel, "node_type"), "read node type: %v", err)
		return dev, false
	}
	if _, dev.NodeType, err = parseNumbered(s); err != nil {
		d.skip(name, 0, filepath.Join(rel, "node_type"), "parse node type: %v", err)
		return dev, false
	}
	dev.FirmwareVersion, _ = readAttr(filepath.Join(base, "fw_ver"))
	dev.Parent, _ = readAttr(filepath.Join(base, "parent"))
	d.parent(&dev, base)

	ports, err := os.ReadDir(filepath.Join(base, "ports"))
	if err != nil {
		d.skip(name, 0, filepath.Join(rel, "ports"), "list ports: %v", err)
		return dev, false
	}
	nports := 0
	for _, pe := range ports {
		n, err := strconv.Atoi(pe.Name())
		if err != nil || n < 1 {
			continue
		}
		nports++
		if p, ok := d.port(&dev, n); ok {
			dev.Ports = append(dev.Ports, p)
		}
	}
	sort.Slice(dev.Ports, func(i, j int) bool { return dev.Ports[i].Num < dev.Ports[j].Num })
	if len(dev.Ports) == 0 {
		if nports == 0 {
			d.skip(name, 0, filepath.Join(rel, "ports"), "no ports")
		} else {
			d.skip(name, 0, "", "every port was skipped")
		}
		return dev, false
	}
	return dev, true
}

// parent fills the PCI (or other bus) attributes and the driver from the device's
// "device" link; software devices have none.
func (d *discoverer) parent(dev *Device, base string) {
	link := filepath.Join(base, "device")
	target, err := filepath.EvalSymlinks(link)
	if err != nil {
		// Software RDMA (rxe, siw) has no parent device. Name the driver the way
		// libibverbs matches its providers when the kernel gives no driver id.
		if dev.Parent != "" {
			dev.Driver = softDriver(dev.Name)
		}
		return
	}
	if pciAddr.MatchString(filepath.Base(target)) {
		dev.PCIAddress = filepath.Base(target)
		dev.Vendor, _ = readAttr(filepath.Join(link, "vendor"))
		dev.DeviceID, _ = readAttr(filepath.Join(link, "device"))
	}
	if drv, err := filepath.EvalSymlinks(filepath.Join(link, "driver")); err == nil {
		dev.Driver = filepath.Base(drv)
	}
	if s, err := readAttr(filepath.Join(link, "numa_node")); err == nil {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			dev.NUMANode = n
		}
	}
}

var pciAddr = regexp.MustCompile(`^[0-9a-f]{4,}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

func softDriver(name string) string {
	switch {
	case strings.HasPrefix(name, "rxe"):
		return "rdma_rxe"
	case strings.HasPrefix(name, "siw"):
		return "siw"
	}
	return ""
}

func (d *discoverer) port(dev *Device, n int) (Port, bool) {
	p := Port{Num: n}
	rel := filepath.Join(classIB, dev.Name, "ports", strconv.Itoa(n))
	base := d.sys(rel)
	fail := func(attr string, format string, args ...any) (Port, bool) {
		d.skip(dev.Name, n, filepath.Join(rel, attr), format, args...)
		return p, false
	}
	s, err := readAttr(filepath.Join(base, "state"))
	if err != nil {
		return fail("state", "read port state: %v", err)
	}
	if _, p.State, err = parseNumbered(s); err != nil {
		return fail("state", "parse port state: %v", err)
	}
	s, err = readAttr(filepath.Join(base, "phys_state"))
	if err != nil {
		return fail("phys_state", "read physical state: %v", err)
	}
	if _, p.PhysState, err = parseNumbered(s); err != nil {
		return fail("phys_state", "parse physical state: %v", err)
	}
	if p.LinkLayer, err = readAttr(filepath.Join(base, "link_layer")); err != nil {
		return fail("link_layer", "read link layer: %v", err)
	}
	if p.LinkLayer, err = parseLinkLayer(p.LinkLayer); err != nil {
		return fail("link_layer", "%v", err)
	}
	p.Rate, _ = readAttr(filepath.Join(base, "rate"))

	base0 := d.portNetdevs(dev, n)
	p.GIDs = d.gids(dev.Name, n, rel)
	p.Netdevs = append(p.Netdevs, base0...)
	var uppers []string
	for _, g := range p.GIDs {
		if g.Netdev != "" && !contains(p.Netdevs, g.Netdev) && !contains(uppers, g.Netdev) {
			uppers = append(uppers, g.Netdev)
		}
	}
	sort.Strings(uppers)
	p.Netdevs = append(p.Netdevs, uppers...)
	if p.RoCE() && len(p.Netdevs) > 0 {
		if s, err := readAttr(d.sys(classNet, p.Netdevs[0], "mtu")); err == nil {
			if mtu, err := strconv.Atoi(s); err == nil {
				p.ActiveMTU = RoCEMTU(mtu)
			}
		}
	}
	return p, true
}

// portNetdevs returns the netdev(s) a port sits on: the software device's parent, or
// the PCI function's net/ entries (matched to the port by dev_port when the device
// has several ports).
func (d *discoverer) portNetdevs(dev *Device, port int) []string {
	if dev.Parent != "" {
		return []string{dev.Parent}
	}
	netDir := d.sys(classIB, dev.Name, "device", "net")
	ents, err := os.ReadDir(netDir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if s, err := readAttr(filepath.Join(netDir, e.Name(), "dev_port")); err == nil {
			if dp, err := strconv.Atoi(s); err == nil && dp != port-1 {
				continue
			}
		}
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// gids reads the populated entries of a port's GID table. Empty (all-zero) entries
// are skipped without reading their attributes (the kernel fails those reads with
// EINVAL); a populated entry whose GID or type cannot be parsed is skipped with a
// reason.
func (d *discoverer) gids(dev string, port int, rel string) []GID {
	if d.r.GIDTable != nil {
		if out, err := d.r.GIDTable(dev, port); err == nil {
			return d.gidNetdevs(out, rel)
		}
	}
	base := d.sys(rel)
	ents, err := os.ReadDir(filepath.Join(base, "gids"))
	if err != nil {
		return nil
	}
	var out []GID
	for _, e := range ents {
		idx, err := strconv.Atoi(e.Name())
		if err != nil || idx < 0 {
			continue
		}
		attr := filepath.Join(rel, "gids", e.Name())
		s, err := readAttr(filepath.Join(base, "gids", e.Name()))
		if err != nil {
			d.skip(dev, port, attr, "read GID %d: %v", idx, err)
			continue
		}
		ip, err := ParseGID(s)
		if err != nil {
			d.skip(dev, port, attr, "GID %d: %v", idx, err)
			continue
		}
		if ip.IsUnspecified() {
			continue
		}
		g := GID{Index: idx, GID: ip}
		tattr := filepath.Join(rel, "gid_attrs", "types", e.Name())
		s, err = readAttr(d.sys(tattr))
		if err != nil {
			d.skip(dev, port, tattr, "read type of GID %d: %v", idx, err)
			continue
		}
		if g.Type, err = ParseGIDType(s); err != nil {
			d.skip(dev, port, tattr, "GID %d: %v", idx, err)
			continue
		}
		// InfiniBand ports have no netdev; the read fails there, which is fine.
		g.Netdev, _ = readAttr(d.sys(rel, "gid_attrs", "ndevs", e.Name()))
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// gidNetdevs sorts entries a GIDTableFunc returned and fills in their netdevs from sysfs
// (a netdev's name as the device's namespace spells it, not an ifindex of the caller's).
func (d *discoverer) gidNetdevs(gs []GID, rel string) []GID {
	out := make([]GID, 0, len(gs))
	for _, g := range gs {
		g.Netdev, _ = readAttr(d.sys(rel, "gid_attrs", "ndevs", strconv.Itoa(g.Index)))
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// readAttr reads a sysfs attribute and trims the trailing newline and blanks. It
// costs three system calls (open, read, close) and no buffer allocation: discovery
// reads thousands of attributes per scan (GID tables have 256..1024 entries a port).
func readAttr(path string) (string, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer func() { _ = syscall.Close(fd) }()
	var buf [maxAttr + 1]byte
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(fd, buf[n:])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return "", &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			break
		}
		n += m
	}
	if n > maxAttr {
		return "", fmt.Errorf("attribute %s is longer than %d bytes", path, maxAttr)
	}
	return strings.TrimSpace(string(buf[:n])), nil
}

const maxAttr = 4096 // sysfs attributes are at most one page
