package rdma

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

// GID policy modes.
const (
	GIDPolicyRoCEv2IPv4 = "roce-v2-ipv4" // default: RoCE v2 GID with an IPv4-mapped address
	GIDPolicyRoCEv2IPv6 = "roce-v2-ipv6" // RoCE v2 GID with an IPv6 address, global before link-local
	GIDPolicyIndex      = "index"        // an explicit GID index
)

// GIDPolicy says which GID of a port to use.
type GIDPolicy struct {
	Mode  string // GIDPolicyRoCEv2IPv4 (default when empty), GIDPolicyRoCEv2IPv6 or GIDPolicyIndex
	Index int    // the index for GIDPolicyIndex
	// Netdev restricts the choice to GIDs owned by this netdev (e.g. a VLAN upper
	// device). Empty: the port's own netdev is preferred, upper devices are used when
	// it has no matching GID.
	Netdev string
}

// ErrNoGID is returned (wrapped) by ChooseGID when no GID matches the policy.
var ErrNoGID = errors.New("no matching GID")

// Validate checks the policy's mode and index.
func (pol GIDPolicy) Validate() error {
	switch pol.Mode {
	case "", GIDPolicyRoCEv2IPv4, GIDPolicyRoCEv2IPv6:
	case GIDPolicyIndex:
		if pol.Index < 0 {
			return fmt.Errorf("GID index %d is negative", pol.Index)
		}
	default:
		return fmt.Errorf("unknown GID policy %q (want %s, %s or %s)", pol.Mode, GIDPolicyRoCEv2IPv4, GIDPolicyRoCEv2IPv6, GIDPolicyIndex)
	}
	return nil
}

// ChooseGID picks the GID an endpoint on port p should use under pol and returns it
// with a human-readable reason. On InfiniBand ports the default policy picks the port
// GID (index 0). The error wraps ErrNoGID when no entry matches.
func ChooseGID(p Port, pol GIDPolicy) (GID, string, error) {
	if err := pol.Validate(); err != nil {
		return GID{}, "", err
	}
	mode := pol.Mode
	if mode == "" {
		mode = GIDPolicyRoCEv2IPv4
	}
	switch {
	case mode == GIDPolicyIndex:
		return gidAtIndex(p, pol)
	case p.LinkLayer == LinkLayerInfiniBand:
		return infiniBandGID(p, mode)
	}
	return roceGID(p, pol, mode)
}

// gidAtIndex is the GID at the policy's explicit index (on its netdev, if it names one).
func gidAtIndex(p Port, pol GIDPolicy) (GID, string, error) {
	for _, g := range p.GIDs {
		if g.Index != pol.Index {
			continue
		}
		if pol.Netdev != "" && g.Netdev != pol.Netdev {
			return GID{}, "", fmt.Errorf("GID %d of port %d belongs to netdev %q, not %q: %w", pol.Index, p.Num, g.Netdev, pol.Netdev, ErrNoGID)
		}
		return g, fmt.Sprintf("explicit index %d (%s %s on %s)", g.Index, g.Type, ipString(g.GID), netdevName(g.Netdev)), nil
	}
	return GID{}, "", fmt.Errorf("GID index %d of port %d is empty: %w", pol.Index, p.Num, ErrNoGID)
}

// infiniBandGID is an InfiniBand port's port GID (index 0).
func infiniBandGID(p Port, mode string) (GID, string, error) {
	if mode != GIDPolicyRoCEv2IPv4 {
		return GID{}, "", fmt.Errorf("policy %s needs RoCE, port %d is InfiniBand: %w", mode, p.Num, ErrNoGID)
	}
	for _, g := range p.GIDs {
		if g.Index == 0 {
			return g, "InfiniBand port: port GID (index 0)", nil
		}
	}
	return GID{}, "", fmt.Errorf("InfiniBand port %d has no GID 0: %w", p.Num, ErrNoGID)
}

// roceGID picks among the port's RoCE v2 GIDs of the policy's address family, in
// order of preference: on the wanted netdev (or the port's own netdev), then
// (without an explicit netdev) on upper devices; within each, IPv6 global before
// link-local, then lowest index.
func roceGID(p Port, pol GIDPolicy, mode string) (GID, string, error) {
	home := pol.Netdev
	if home == "" && len(p.Netdevs) > 0 {
		home = p.Netdevs[0]
	}
	var own, upper []GID
	for _, g := range p.GIDs {
		if g.Type != GIDTypeRoCEv2 || g.IPv4() != (mode == GIDPolicyRoCEv2IPv4) {
			continue
		}
		switch {
		case g.Netdev == home:
			own = append(own, g)
		case pol.Netdev == "":
			upper = append(upper, g)
		}
	}
	what := "RoCE v2 GID with an IPv4-mapped address"
	if mode == GIDPolicyRoCEv2IPv6 {
		what = "RoCE v2 GID with an IPv6 address"
	}
	if g, ok := preferGlobal(own); ok {
		return g, fmt.Sprintf("%s: %s on %s (port %d)", what, ipString(g.GID), netdevName(g.Netdev), p.Num), nil
	}
	if g, ok := preferGlobal(upper); ok {
		return g, fmt.Sprintf("%s: %s on upper device %s (none on %s, port %d)", what, ipString(g.GID), g.Netdev, netdevName(home), p.Num), nil
	}
	var seen []string
	for _, g := range p.GIDs {
		seen = append(seen, fmt.Sprintf("%d=%s/%s/%s", g.Index, ipString(g.GID), g.Type, netdevName(g.Netdev)))
	}
	where := netdevName(home)
	if pol.Netdev == "" && len(p.Netdevs) > 1 {
		where = strings.Join(p.Netdevs, ",")
	}
	return GID{}, "", fmt.Errorf("no %s on %s (port %d, GIDs: %s): %w", what, where, p.Num, orNone(seen), ErrNoGID)
}

// preferGlobal is the first GID that is not link-local, else the first.
func preferGlobal(gs []GID) (GID, bool) {
	best, ok := GID{}, false
	for _, g := range gs {
		if !ok || (best.GID.IsLinkLocalUnicast() && !g.GID.IsLinkLocalUnicast()) {
			best, ok = g, true
		}
	}
	return best, ok
}

// FindGIDByIP returns the device, port and RoCE v2 GID whose address is ip (an IPv4
// address matches its IPv4-mapped GID). ok is false when no device has one.
func FindGIDByIP(devs []Device, ip net.IP) (dev Device, port Port, gid GID, ok bool) {
	for _, d := range devs {
		for _, p := range d.Ports {
			for _, g := range p.GIDs {
				if g.Type == GIDTypeRoCEv2 && g.GID.Equal(ip) {
					return d, p, g, true
				}
			}
		}
	}
	return Device{}, Port{}, GID{}, false
}

func ipString(ip net.IP) string {
	if ip4 := ip.To4(); ip4 != nil {
		return ip4.String()
	}
	return ip.String()
}

func netdevName(s string) string {
	if s == "" {
		return "no netdev"
	}
	return s
}

func orNone(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, " ")
}
