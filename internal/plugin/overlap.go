package plugin

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ringcap/ringcap/pkg/rdma"
)

// With plugin.mode both, the device plugin and the DRA driver run side by side on a node and
// do not see each other's allocations: a device both hand out could go to two pods. Each
// side is given the other's config (--other-config) and keeps out of the devices the
// other selects: a device both select refuses the start, and one that appears later is
// left out by both.

// Sides, as messages name them.
const (
	SideDevicePlugin = "the device plugin"
	SideDRA          = "the DRA driver"
)

// ErrOverlap is the start-up refusal when both sides' configs select a device.
var ErrOverlap = errors.New("devices selected by both the device plugin's and the DRA driver's config")

// Overlap is a device a pool of this side's config and a pool of the other side's config
// both select (the first such pool of each).
type Overlap struct {
	Device    string
	Pool      string
	OtherPool string
}

// Reason says why the device is left out, as this side logs it.
func (o Overlap) Reason(otherSide string) string {
	return fmt.Sprintf("also selected by %s's pool %q (--other-config): left out by both, so it is never handed out twice", otherSide, o.OtherPool)
}

// firstPool is the name of the first pool that selects d.
func (c *Config) firstPool(d rdma.Device) (string, bool) {
	for _, p := range c.Pools {
		if p.Selector.Matches(d) {
			return p.Name, true
		}
	}
	return "", false
}

// Overlaps returns the devices of devs, in order, that c and other both select; none
// when other is nil.
func (c *Config) Overlaps(other *Config, devs []rdma.Device) []Overlap {
	if other == nil {
		return nil
	}
	var out []Overlap
	for _, d := range devs {
		p, ok := c.firstPool(d)
		if !ok {
			continue
		}
		if q, ok := other.firstPool(d); ok {
			out = append(out, Overlap{Device: d.Name, Pool: p, OtherPool: q})
		}
	}
	return out
}

// WithoutOverlaps returns devs without the overlapping devices.
func WithoutOverlaps(devs []rdma.Device, ov []Overlap) []rdma.Device {
	if len(ov) == 0 {
		return devs
	}
	drop := map[string]bool{}
	for _, o := range ov {
		drop[o.Device] = true
	}
	out := make([]rdma.Device, 0, len(devs))
	for _, d := range devs {
		if !drop[d.Name] {
			out = append(out, d)
		}
	}
	return out
}

// RefuseOverlaps fails (ErrOverlap) when c and other both select a device of devs, naming
// each such device and both pools; side and otherSide are SideDevicePlugin and SideDRA.
func RefuseOverlaps(c, other *Config, devs []rdma.Device, side, otherSide string) error {
	ov := c.Overlaps(other, devs)
	if len(ov) == 0 {
		return nil
	}
	parts := make([]string, len(ov))
	for i, o := range ov {
		parts[i] = fmt.Sprintf("%s (%s's pool %q and %s's pool %q)", o.Device, side, o.Pool, otherSide, o.OtherPool)
	}
	return fmt.Errorf("%w: %s; change the pools' selectors (chart values plugin.config and plugin.dra.config) so that each device is selected by one side only",
		ErrOverlap, strings.Join(parts, ", "))
}
