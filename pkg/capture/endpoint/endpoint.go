// Package endpoint chooses the RDMA device, port and GID a receiver or sender
// uses: from flags, the device plugin's environment, or automatically from
// the address in use and the devices found in sysfs.
package endpoint

import (
	"fmt"
	"net"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
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

// Chosen is the device, port and GID an endpoint uses and why: what a
// receiver or sender logs and a receiver reports in its status.
type Chosen struct {
	Device   string
	Port     int // the device's port number
	GIDIndex int
	GID      string // the GID in IPv6 notation
	Netdev   string // the network device that carries the GID
	Reason   string // why this GID
}

// Choose resolves a request against the discovered devices: the
// device, port and GID index to use and a human-readable reason, which the
// receiver logs and reports in its status.
func Choose(devs []rdma.Device, req Request) (fabric.DeviceConfig, Chosen, error) {
	if req.Source == "" {
		req.Source = "flags"
	}
	if c, ok := byAddress(devs, req); ok {
		return c.result()
	}
	var cands []rdma.Device
	for _, d := range devs {
		if req.Device == "" || d.Name == req.Device {
			cands = append(cands, d)
		}
	}
	if len(cands) == 0 {
		if req.Device != "" {
			return fail(fmt.Errorf("RDMA device %q not found (%s); devices: %s", req.Device, req.Source, names(devs)))
		}
		return fail(fmt.Errorf("no RDMA device found"))
	}
	var firstErr error
	for _, d := range cands {
		for _, p := range d.Ports {
			if (req.Port != 0 && p.Num != req.Port) || (!p.Active() && req.Port == 0) {
				continue
			}
			c, err := onPort(d, p, req)
			if err == nil || req.GIDIndex >= 0 {
				return c.resultOr(err)
			}
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	switch {
	case firstErr != nil:
		return fail(firstErr)
	case req.Port != 0:
		return fail(fmt.Errorf("no port %d on %s", req.Port, names(cands)))
	}
	return fail(fmt.Errorf("no active port on %s", names(cands)))
}

// choice is a device, port and GID with the reason they were chosen.
type choice struct {
	d      rdma.Device
	p      rdma.Port
	g      rdma.GID
	reason string
}

func (c choice) result() (fabric.DeviceConfig, Chosen, error) {
	return done(c.d, c.p, c.g, c.reason)
}

func (c choice) resultOr(err error) (fabric.DeviceConfig, Chosen, error) {
	if err != nil {
		return fail(err)
	}
	return c.result()
}

func fail(err error) (fabric.DeviceConfig, Chosen, error) {
	return fabric.DeviceConfig{}, Chosen{}, err
}

func specific(ip net.IP) bool { return ip != nil && !ip.IsUnspecified() }

// byAddress finds the RoCE v2 GID that carries the address in use: the listen
// address (any device unless one was asked for: that one's ports are searched
// later) or, listening on every address with no GID index asked for, one of
// this host's addresses.
func byAddress(devs []rdma.Device, req Request) (choice, bool) {
	if specific(req.IP) {
		if req.Device != "" {
			return choice{}, false
		}
		d, p, g, ok := rdma.FindGIDByIP(devs, req.IP)
		ok = ok && (req.GIDIndex < 0 || req.GIDIndex == g.Index)
		return choice{d, p, g, fmt.Sprintf("RoCE v2 GID %d carries the listen address %s on %s", g.Index, req.IP, g.Netdev)}, ok
	}
	if req.GIDIndex >= 0 {
		return choice{}, false
	}
	for _, ip := range req.LocalIPs {
		for _, d := range devs {
			if req.Device != "" && d.Name != req.Device {
				continue
			}
			if d, p, g, ok := rdma.FindGIDByIP([]rdma.Device{d}, ip); ok && (req.Port == 0 || req.Port == p.Num) {
				return choice{d, p, g, fmt.Sprintf("RoCE v2 GID %d carries the local address %s on %s (listening on all addresses)", g.Index, ip, g.Netdev)}, true
			}
		}
	}
	return choice{}, false
}

// onPort chooses the GID on one port: the index asked for, else the RoCE v2
// GID that carries the listen address, else the port's best GID.
func onPort(d rdma.Device, p rdma.Port, req Request) (choice, error) {
	if req.GIDIndex >= 0 {
		g, why, err := rdma.ChooseGID(p, rdma.GIDPolicy{Mode: rdma.GIDPolicyIndex, Index: req.GIDIndex})
		if err != nil {
			return choice{}, fmt.Errorf("%s port %d: GID index %d (%s): %w", d.Name, p.Num, req.GIDIndex, req.Source, err)
		}
		return choice{d, p, g, fmt.Sprintf("GID index %d from %s: %s", g.Index, req.Source, why)}, nil
	}
	if specific(req.IP) {
		for _, g := range p.GIDs {
			if g.Type == rdma.GIDTypeRoCEv2 && g.GID.Equal(req.IP) {
				return choice{d, p, g, fmt.Sprintf("RoCE v2 GID %d carries the listen address %s on %s", g.Index, req.IP, g.Netdev)}, nil
			}
		}
	}
	g, why, err := rdma.ChooseGID(p, rdma.GIDPolicy{})
	if err != nil {
		return choice{}, fmt.Errorf("%s port %d: %w", d.Name, p.Num, err)
	}
	if specific(req.IP) {
		why += fmt.Sprintf(" (no GID carries the listen address %s)", req.IP)
	}
	return choice{d, p, g, why}, nil
}

func done(d rdma.Device, p rdma.Port, g rdma.GID, reason string) (fabric.DeviceConfig, Chosen, error) {
	return fabric.DeviceConfig{Device: d.Name, Port: p.Num, GIDIndex: g.Index},
		Chosen{Device: d.Name, Port: p.Num, GIDIndex: g.Index, GID: g.GID.String(), Netdev: g.Netdev, Reason: reason}, nil
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
