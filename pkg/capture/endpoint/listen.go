package endpoint

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/rdma"
)

// Where `ringcap recv` listens (--listen-on) and who may send (--allowed-senders).
//
//   - any (the default): the address of --listen as given (0.0.0.0: every address).
//   - rdma: the IPv4 address of the RoCE v2 GID the receiver uses (the device plugin's
//     choice, or --device/--gid-index): the RDMA netdev's address on the data network.
//     A RingCapture in Host mode runs in the node's network namespace with this.
//   - attachment=NS/NAME: the address of the pod's interface of that network
//     attachment, found in $RINGCAP_NETWORK_STATUS (the pod's network-status
//     annotation) or named by --listen-interface, else net1; the GID is the RoCE v2 GID
//     that carries that address (a macvlan or ipvlan upper device of the RDMA netdev has
//     GIDs of its own), not the device plugin's GID of the node's netdev.

const (
	ListenAny        = "any"
	ListenRDMA       = "rdma"
	ListenAttachment = "attachment="
	// EnvNetworkStatus carries the pod's k8s.v1.cni.cncf.io/network-status annotation.
	EnvNetworkStatus = "RINGCAP_NETWORK_STATUS"
	// DefaultAttachmentInterface is the interface name Multus gives the first attachment.
	DefaultAttachmentInterface = "net1"
	AllowAny                   = "any"
	AllowListenSubnet          = "listen-subnet"
)

// listenPlan is what --listen, --listen-on and --listen-interface ask for.
type listenPlan struct {
	host, port string
	on         string // ListenAny, ListenRDMA or ListenAttachment+name
	iface      string // --listen-interface
}

func parseListen(listen, on, iface string) (listenPlan, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listenPlan{}, fmt.Errorf("--listen %q: %w", listen, err)
	}
	if host != "" && net.ParseIP(host) == nil {
		return listenPlan{}, fmt.Errorf("--listen %q: the host must be an IP address", listen)
	}
	p := listenPlan{host: host, port: port, on: on, iface: iface}
	switch {
	case on == "" || on == ListenAny:
		p.on = ListenAny
	case on == ListenRDMA, strings.HasPrefix(on, ListenAttachment) && len(on) > len(ListenAttachment):
		if host != "" && !net.ParseIP(host).IsUnspecified() {
			return listenPlan{}, fmt.Errorf("--listen-on %s chooses the address: give --listen :PORT, not %s", on, listen)
		}
	default:
		return listenPlan{}, fmt.Errorf("--listen-on %q: want any, rdma or attachment=NAMESPACE/NAME", on)
	}
	if iface != "" && !strings.HasPrefix(p.on, ListenAttachment) {
		return listenPlan{}, fmt.Errorf("--listen-interface applies only with --listen-on attachment=NAMESPACE/NAME")
	}
	return p, nil
}

// listenResult is the address the receiver listens on and how it was found.
type listenResult struct {
	ip     net.IP
	subnet netip.Prefix // the subnet of ip on its interface (invalid when ip is unspecified)
	iface  string
	reason string
}

// addrLookup lists the addresses of a named interface (systemAddrs; a table in tests).
type addrLookup func(name string) ([]net.Addr, error)

func systemAddrs(name string) ([]net.Addr, error) {
	i, err := net.InterfaceByName(name)
	if err != nil {
		return nil, err
	}
	return i.Addrs()
}

// interfaceAddress returns the interface's IPv4 address (a global IPv6 one when it has
// none) with its subnet.
func interfaceAddress(name string, addrs addrLookup) (net.IP, netip.Prefix, error) {
	as, err := addrs(name)
	if err != nil {
		return nil, netip.Prefix{}, fmt.Errorf("interface %s: %w", name, err)
	}
	var v6 *net.IPNet
	for _, a := range as {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLoopback() || n.IP.IsLinkLocalUnicast() {
			continue
		}
		if n.IP.To4() != nil {
			return n.IP.To4(), prefixOf(n), nil
		}
		if v6 == nil {
			v6 = n
		}
	}
	if v6 != nil {
		return v6.IP, prefixOf(v6), nil
	}
	return nil, netip.Prefix{}, fmt.Errorf("interface %s has no IPv4 or global IPv6 address", name)
}

func prefixOf(n *net.IPNet) netip.Prefix {
	a, _ := netip.AddrFromSlice(n.IP)
	ones, _ := n.Mask.Size()
	if a.Is4In6() {
		a = a.Unmap()
	}
	return netip.PrefixFrom(a, ones).Masked()
}

// addressOwner finds the interface that carries ip and ip's subnet there.
func addressOwner(ip net.IP) (string, netip.Prefix, bool) {
	ifs, err := net.Interfaces()
	if err != nil {
		return "", netip.Prefix{}, false
	}
	for _, i := range ifs {
		as, err := i.Addrs()
		if err != nil {
			continue
		}
		for _, a := range as {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return i.Name, prefixOf(n), true
			}
		}
	}
	return "", netip.Prefix{}, false
}

// networkStatusEntry is one entry of the k8s.v1.cni.cncf.io/network-status annotation.
type networkStatusEntry struct {
	Name      string   `json:"name"`
	Interface string   `json:"interface"`
	IPs       []string `json:"ips"`
	Default   bool     `json:"default"`
}

// attachmentInterface names the interface of attachment ns/name: --listen-interface,
// else the network-status annotation's entry for it, else net1.
func attachmentInterface(attachment, flagIface, networkStatus string) (string, string) {
	if flagIface != "" {
		return flagIface, fmt.Sprintf("interface %s of attachment %s (spec.network.interface, --listen-interface)", flagIface, attachment)
	}
	var entries []networkStatusEntry
	if networkStatus != "" && json.Unmarshal([]byte(networkStatus), &entries) == nil {
		_, name, _ := strings.Cut(attachment, "/")
		for _, e := range entries {
			if e.Interface != "" && !e.Default && (e.Name == attachment || e.Name == name) {
				return e.Interface, fmt.Sprintf("interface %s of attachment %s (from the pod's network-status annotation)", e.Interface, attachment)
			}
		}
	}
	why := "no network-status annotation"
	if networkStatus != "" {
		why = "the network-status annotation does not list it"
	}
	return DefaultAttachmentInterface, fmt.Sprintf("interface %s of attachment %s (%s: the first attachment's default name)", DefaultAttachmentInterface, attachment, why)
}

// resolveInterface finds the listen address before the RDMA endpoint is chosen: the
// attachment's interface address (listen-on attachment), or the --listen host.
func (p listenPlan) resolveInterface(addrs addrLookup, networkStatus string) (listenResult, error) {
	if !strings.HasPrefix(p.on, ListenAttachment) {
		ip := net.ParseIP(p.host)
		res := listenResult{ip: ip}
		if ip != nil && !ip.IsUnspecified() {
			if name, subnet, ok := addressOwner(ip); ok {
				res.iface, res.subnet = name, subnet
			}
		}
		return res, nil
	}
	attachment := strings.TrimPrefix(p.on, ListenAttachment)
	name, reason := attachmentInterface(attachment, p.iface, networkStatus)
	ip, subnet, err := interfaceAddress(name, addrs)
	if err != nil {
		return listenResult{}, fmt.Errorf("--listen-on %s: %s: %w", p.on, reason, err)
	}
	return listenResult{ip: ip, subnet: subnet, iface: name, reason: "the address of " + reason}, nil
}

// rdmaAddress is the address of the RoCE v2 GID the endpoint uses (listen-on rdma).
func rdmaAddress(ep Chosen) (listenResult, error) {
	gid := net.ParseIP(ep.GID)
	ip := gid.To4()
	if ip == nil {
		return listenResult{}, fmt.Errorf("--listen-on rdma: GID %s (index %d of %s port %d) is not an IPv4-mapped RoCE v2 GID, so it names no address to listen on; give --listen ADDRESS:PORT",
			ep.GID, ep.GIDIndex, ep.Device, ep.Port)
	}
	name, subnet, ok := addressOwner(ip)
	if !ok {
		return listenResult{}, noRDMAAddress(ip, ep, netdevHere(ep.Netdev))
	}
	return listenResult{ip: ip, subnet: subnet, iface: name,
		reason: fmt.Sprintf("the address of %s, the netdev of RoCE v2 GID %d of %s port %d the receiver uses", name, ep.GIDIndex, ep.Device, ep.Port)}, nil
}

// noRDMAAddress says why listen-on rdma found no interface with the GID's
// address: the netdev is in another network namespace (a pod's own, or a node
// that is a container, such as kind's), or it is here without that address.
func noRDMAAddress(ip net.IP, ep Chosen, netdevHere bool) error {
	gid := fmt.Sprintf("GID %d of %s", ep.GIDIndex, ep.Device)
	if ep.Netdev != "" && !netdevHere {
		return fmt.Errorf("--listen-on rdma: netdev %s, which carries %s (address %s), is not in this network namespace, so no address here is on the data network: run in the network namespace that holds it (hostNetwork on a node that holds its RDMA netdevs; a kind node is a container and holds none of its host's)",
			ep.Netdev, gid, ip)
	}
	return fmt.Errorf("--listen-on rdma: no interface here has %s, the address of %s (netdev %s): is this the node's network namespace (hostNetwork)?",
		ip, gid, ep.Netdev)
}

// netdevHere reports whether this network namespace has an interface named name.
func netdevHere(name string) bool {
	_, err := net.InterfaceByName(name)
	return err == nil
}

// senderFilter builds the allowlist of --allowed-senders: any, listen-subnet (the
// subnet of the address the receiver listens on) or comma-separated CIDRs.
func senderFilter(spec string, l listenResult) (*SenderFilter, error) {
	switch spec {
	case "", AllowAny:
		return nil, nil
	case AllowListenSubnet:
		if !l.subnet.IsValid() {
			return nil, fmt.Errorf("--allowed-senders listen-subnet: the receiver listens on every address (%v), which has no one subnet; give CIDRs", l.ip)
		}
		return NewSenderFilter([]netip.Prefix{l.subnet})
	}
	var nets []netip.Prefix
	for _, s := range strings.Split(spec, ",") {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("--allowed-senders %q: %w (want any, listen-subnet or CIDRs such as 198.18.0.0/24)", spec, err)
		}
		nets = append(nets, p)
	}
	return NewSenderFilter(nets)
}

// Listen is where a receiver listens and who may send to it: --listen
// (HOST:PORT), --listen-on (any, rdma or attachment=NAMESPACE/NAME),
// --listen-interface and --allowed-senders (any, listen-subnet or CIDRs).
type Listen struct {
	Addr, On, Interface, Allowed string
	// NoDevice skips choosing an RDMA device: the transport (ofi) opens
	// its own domain, so listen-on rdma is refused.
	NoDevice bool
}

// Choice is where a receiver listens, on which RDMA device, port and GID,
// and who may send.
type Choice struct {
	Addr string // HOST:PORT
	// Host and Port are Addr's parts; AddressReason says how Host was chosen
	// ("" when it was given).
	Host          string
	Port          int
	AddressReason string
	Device        fabric.DeviceConfig
	// RDMA is the device, port and GID chosen and why; nil when none was
	// (Listen.NoDevice).
	RDMA    *Chosen
	Senders *SenderFilter // nil: any sender
}

// ChooseListen picks the listen address and the RDMA endpoint together: with
// listen-on attachment the interface's address first and then the GID that
// carries it; with listen-on rdma the GID first and then its address. req is
// what the flags ask for; the device plugin's environment (getenv) fills in
// the rest, except its GID index with listen-on attachment (it is the node
// netdev's; the attachment has its own).
func ChooseListen(roots rdma.Roots, l Listen, req Request, getenv func(string) string, log *slog.Logger) (Choice, error) {
	plan, err := parseListen(l.Addr, l.On, l.Interface)
	if err != nil {
		return Choice{}, err
	}
	res, err := plan.resolveInterface(systemAddrs, getenv(EnvNetworkStatus))
	if err != nil {
		return Choice{}, err
	}
	devCfg, rd, err := chooseDevice(roots, l, plan, req, res.ip, getenv, log)
	if err != nil {
		return Choice{}, err
	}
	if plan.on == ListenRDMA {
		if res, err = rdmaAddress(*rd); err != nil {
			return Choice{}, err
		}
	}
	filter, err := senderFilter(l.Allowed, res)
	if err != nil {
		return Choice{}, err
	}
	host := plan.host
	if res.ip != nil {
		host = res.ip.String()
	}
	if res.reason != "" {
		log.Info("Chose the listen address", "address", host, "interface", res.iface, "reason", res.reason)
	}
	port, _ := strconv.Atoi(plan.port)
	return Choice{Addr: net.JoinHostPort(host, plan.port), Host: host, Port: port, AddressReason: res.reason,
		Device: devCfg, RDMA: rd, Senders: filter}, nil
}

// chooseDevice chooses the RDMA device, port and GID for the listen address
// ip (none with l.NoDevice, which refuses listen-on rdma).
func chooseDevice(roots rdma.Roots, l Listen, plan listenPlan, req Request, ip net.IP, getenv func(string) string, log *slog.Logger) (fabric.DeviceConfig, *Chosen, error) {
	if l.NoDevice {
		if plan.on == ListenRDMA {
			return fabric.DeviceConfig{}, nil, fmt.Errorf("--listen-on %s needs the verbs transport (its RoCE v2 GID's address)", ListenRDMA)
		}
		return fabric.DeviceConfig{}, nil, nil
	}
	req, err := req.withEnv(getenv, strings.HasPrefix(plan.on, ListenAttachment))
	if err != nil {
		return fabric.DeviceConfig{}, nil, err
	}
	req.IP, req.LocalIPs = ip, localIPs()
	devCfg, ch, _, err := Find(roots, req)
	if err != nil {
		return fabric.DeviceConfig{}, nil, err
	}
	log.Info("Chose RDMA endpoint", "device", ch.Device, "port", ch.Port, "gidIndex", devCfg.GIDIndex, "gid", ch.GID, "netdev", ch.Netdev, "reason", ch.Reason)
	return devCfg, &ch, nil
}

// localIPs lists this host's (pod's) non-loopback addresses.
func localIPs() []net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			out = append(out, n.IP)
		}
	}
	return out
}
