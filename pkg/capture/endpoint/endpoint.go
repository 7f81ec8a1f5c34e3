// Package endpoint chooses the RDMA device, port and GID a receiver or sender
// uses: from flags, the device plugin's environment, or automatically from
// the address in use and the devices found in sysfs.
package endpoint

import (
	"fmt"
	"net"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/rdma"
)

// Request is what the user (flags) or the device plugin (environment)
// asked for; empty fields are chosen automatically.
type Request struct {
	Device   string // "" = automatic
	Port     int    // 0 = automatic (the first active port)
	GIDIndex int    // -1 = automatic
	// IP is the address the endpoint serves on; automatic selection prefers the
	// RoCE v2 GID that carries it. nil or unspecified: any.
	IP net.IP
	// LocalIPs are this host's (pod's) addresses; with IP unspecified, a
	// RoCE v2 GID carrying one of them is preferred.
	LocalIPs []net.IP
	// Source says where explicit values came from, for the reason text
	// ("flags", "device plugin environment").
	Source string
}

// Choose resolves a request against the discovered devices: the
// device, port and GID index to use and a human-readable reason, which the
// receiver logs and reports in its status.
func Choose(devs []rdma.Device, req Request) (fabric.DeviceConfig, statusdoc.Endpoint, error) {
	src := req.Source
	if src == "" {
		src = "flags"
	}
	specificIP := req.IP != nil && !req.IP.IsUnspecified()
	// Automatic device: the one whose RoCE v2 GID carries the listen IP.
	if req.Device == "" && specificIP {
		if d, p, g, ok := rdma.FindGIDByIP(devs, req.IP); ok && (req.GIDIndex < 0 || req.GIDIndex == g.Index) {
			return done(d, p, g, fmt.Sprintf("RoCE v2 GID %d carries the listen address %s on %s", g.Index, req.IP, g.Netdev))
		}
	}
	if !specificIP && req.GIDIndex < 0 {
		for _, ip := range req.LocalIPs {
			for _, d := range devs {
				if req.Device != "" && d.Name != req.Device {
					continue
				}
				if d, p, g, ok := rdma.FindGIDByIP([]rdma.Device{d}, ip); ok && (req.Port == 0 || req.Port == p.Num) {
					return done(d, p, g, fmt.Sprintf("RoCE v2 GID %d carries the local address %s on %s (listening on all addresses)", g.Index, ip, g.Netdev))
				}
			}
		}
	}
	var cands []rdma.Device
	for _, d := range devs {
		if req.Device == "" || d.Name == req.Device {
			cands = append(cands, d)
		}
	}
	if len(cands) == 0 {
		if req.Device != "" {
			return fabric.DeviceConfig{}, statusdoc.Endpoint{}, fmt.Errorf("RDMA device %q not found (%s); devices: %s", req.Device, src, names(devs))
		}
		return fabric.DeviceConfig{}, statusdoc.Endpoint{}, fmt.Errorf("no RDMA device found")
	}
	var firstErr error
	for _, d := range cands {
		for _, p := range d.Ports {
			if req.Port != 0 && p.Num != req.Port {
				continue
			}
			if !p.Active() && req.Port == 0 {
				continue
			}
			if req.GIDIndex >= 0 {
				g, why, err := rdma.ChooseGID(p, rdma.GIDPolicy{Mode: rdma.GIDPolicyIndex, Index: req.GIDIndex})
				if err != nil {
					return fabric.DeviceConfig{}, statusdoc.Endpoint{}, fmt.Errorf("%s port %d: GID index %d (%s): %w", d.Name, p.Num, req.GIDIndex, src, err)
				}
				return done(d, p, g, fmt.Sprintf("GID index %d from %s: %s", g.Index, src, why))
			}
			if specificIP {
				for _, g := range p.GIDs {
					if g.Type == rdma.GIDTypeRoCEv2 && g.GID.Equal(req.IP) {
						return done(d, p, g, fmt.Sprintf("RoCE v2 GID %d carries the listen address %s on %s", g.Index, req.IP, g.Netdev))
					}
				}
			}
			g, why, err := rdma.ChooseGID(p, rdma.GIDPolicy{})
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("%s port %d: %w", d.Name, p.Num, err)
				}
				continue
			}
			if specificIP {
				why += fmt.Sprintf(" (no GID carries the listen address %s)", req.IP)
			}
			return done(d, p, g, why)
		}
	}
	if firstErr != nil {
		return fabric.DeviceConfig{}, statusdoc.Endpoint{}, firstErr
	}
	if req.Port != 0 {
		return fabric.DeviceConfig{}, statusdoc.Endpoint{}, fmt.Errorf("no port %d on %s", req.Port, names(cands))
	}
	return fabric.DeviceConfig{}, statusdoc.Endpoint{}, fmt.Errorf("no active port on %s", names(cands))
}

func done(d rdma.Device, p rdma.Port, g rdma.GID, reason string) (fabric.DeviceConfig, statusdoc.Endpoint, error) {
	return fabric.DeviceConfig{Device: d.Name, Port: p.Num, GIDIndex: g.Index},
		statusdoc.Endpoint{Device: d.Name, IBPort: p.Num, GIDIndex: new(g.Index), GID: g.GID.String(), Netdev: g.Netdev, GIDReason: reason}, nil
}

func names(devs []rdma.Device) string {
	if len(devs) == 0 {
		return "none"
	}
	s := ""
	for i, d := range devs {
		if i > 0 {
			s += ", "
		}
		s += d.Name
	}
	return s
}
