package rdma

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ParseGID parses a GID as sysfs prints it: eight groups of four hex digits separated
// by colons ("fe80:0000:0000:0000:f845:ecff:fe54:98f8"). It returns a 16-byte IP.
func ParseGID(s string) (net.IP, error) {
	if len(s) != 39 {
		return nil, fmt.Errorf("malformed GID %q: want 8 colon-separated groups of 4 hex digits", trunc(s))
	}
	ip := make(net.IP, net.IPv6len)
	for g := 0; g < 8; g++ {
		off := g * 5
		if g < 7 && s[off+4] != ':' {
			return nil, fmt.Errorf("malformed GID %q: want ':' at offset %d", s, off+4)
		}
		var v uint16
		for _, c := range []byte(s[off : off+4]) {
			n, ok := hexVal(c)
			if !ok {
				return nil, fmt.Errorf("malformed GID %q: %q is not a hex digit", s, c)
			}
			v = v<<4 | uint16(n)
		}
		ip[2*g] = byte(v >> 8)
		ip[2*g+1] = byte(v)
	}
	return ip, nil
}

// FormatGID prints a GID the way sysfs and ibv_devinfo do.
func FormatGID(ip net.IP) string {
	ip16 := ip.To16()
	if ip16 == nil {
		return ""
	}
	var b strings.Builder
	for g := 0; g < 8; g++ {
		if g > 0 {
			b.WriteByte(':')
		}
		fmt.Fprintf(&b, "%02x%02x", ip16[2*g], ip16[2*g+1])
	}
	return b.String()
}

// ParseGIDType parses gid_attrs/types/N: "RoCE v2" or "IB/RoCE v1".
func ParseGIDType(s string) (string, error) {
	switch s {
	case GIDTypeRoCEv2, GIDTypeRoCEv1:
		return s, nil
	}
	return "", fmt.Errorf("unknown GID type %q", trunc(s))
}

// parseGUID checks a GUID as sysfs prints node_guid: four groups of four hex digits.
func parseGUID(s string) (string, error) {
	if len(s) != 19 {
		return "", fmt.Errorf("malformed GUID %q: want 4 colon-separated groups of 4 hex digits", trunc(s))
	}
	for i := 0; i < len(s); i++ {
		if i%5 == 4 {
			if s[i] != ':' {
				return "", fmt.Errorf("malformed GUID %q: want ':' at offset %d", s, i)
			}
			continue
		}
		if _, ok := hexVal(s[i]); !ok {
			return "", fmt.Errorf("malformed GUID %q: %q is not a hex digit", s, s[i])
		}
	}
	return strings.ToLower(s), nil
}

// parseNumbered parses the "<number>: <NAME>" attributes (state, phys_state,
// node_type), e.g. "4: ACTIVE" -> 4, "ACTIVE".
func parseNumbered(s string) (int, string, error) {
	num, name, ok := strings.Cut(s, ":")
	if !ok {
		return 0, "", fmt.Errorf("malformed value %q: want \"<number>: <name>\"", trunc(s))
	}
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil || n < 0 {
		return 0, "", fmt.Errorf("malformed value %q: %q is not a number", trunc(s), trunc(num))
	}
	name = strings.TrimSpace(name)
	if name == "" || strings.ContainsAny(name, "\n\x00") {
		return 0, "", fmt.Errorf("malformed value %q: empty or invalid name", trunc(s))
	}
	return n, name, nil
}

// RoCEMTU returns the RoCE path MTU for a netdev MTU, as the kernel's iboe_get_mtu:
// the largest IB MTU (256..4096) that fits the netdev MTU minus the RoCE headers
// (GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 + ICRC 4 bytes); 0 when none fits.
func RoCEMTU(netdevMTU int) int {
	m := netdevMTU - (40 + 8 + 12 + 4 + 28 + 4)
	for _, v := range []int{4096, 2048, 1024, 512, 256} {
		if m >= v {
			return v
		}
	}
	return 0
}

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func isV4Mapped(ip net.IP) bool {
	return len(ip) == net.IPv6len && ip.To4() != nil && !ip.IsUnspecified()
}

func trunc(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
