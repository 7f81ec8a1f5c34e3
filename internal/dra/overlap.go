package dra

import (
	"fmt"

	"github.com/ringcap/ringcap/internal/plugin"
	"github.com/ringcap/ringcap/pkg/rdma"
)

// refuseOverlaps fails when the device plugin's config (Options.OtherConfig) selects a
// device this driver's config selects too: at start, such a config is refused rather
// than one device handed out both ways.
func (d *Driver) refuseOverlaps() error {
	if d.opts.OtherConfig == nil {
		return nil
	}
	devs, _, err := rdma.Discover(d.opts.Roots)
	if err != nil {
		return fmt.Errorf("discover RDMA devices: %w", err)
	}
	return plugin.RefuseOverlaps(d.opts.Config, d.opts.OtherConfig, devs, plugin.SideDRA, plugin.SideDevicePlugin)
}

// overlapsLeftOut is a LeftOut for every port of each overlapping device of devs.
func overlapsLeftOut(devs []rdma.Device, ov []plugin.Overlap) []LeftOut {
	reason := map[string]string{}
	for _, o := range ov {
		reason[o.Device] = o.Reason(plugin.SideDevicePlugin)
	}
	var out []LeftOut
	for _, d := range devs {
		r, ok := reason[d.Name]
		if !ok {
			continue
		}
		for _, p := range d.Ports {
			out = append(out, LeftOut{Device: d.Name, Port: p.Num, Reason: r})
		}
	}
	return out
}
