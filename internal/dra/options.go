package dra

import (
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/ringcap/ringcap/internal/plugin"
)

// EnvAdminAccess is set to "true" in the containers of a request allocated with
// adminAccess: the device may be in use by another claim at the same time.
const EnvAdminAccess = "RINGCAP_ADMIN_ACCESS"

// checkPools refuses pool options that mean nothing to a DRA driver: a shared pool lets
// several pods use a device through the device plugin's units, while with DRA pods share
// a port by sharing one ResourceClaim.
func checkPools(cfg *plugin.Config) error {
	for i, p := range cfg.Pools {
		if p.Sharing.Mode == plugin.SharingShared {
			return &plugin.FieldError{Path: fmt.Sprintf("pools[%d].sharing.mode", i),
				Msg: fmt.Sprintf("%q does not apply to the DRA driver: pods share a port by sharing a ResourceClaim (set mode %q or leave sharing out)",
					plugin.SharingShared, plugin.SharingExclusive)}
		}
	}
	return nil
}

// addUMad gives each CDI device of spec whose pool in cfg sets charDevices.umad the RDMA
// device's umadN and issmN nodes as well (as the device plugin does); claimSpec made
// spec.Devices in the order of c.Devices.
func addUMad(spec *cdispec.Spec, c preparedClaim, devs map[string]PortDevice, cfg *plugin.Config) {
	umad := map[string]bool{}
	for _, p := range cfg.Pools {
		umad[p.Name] = p.CharDevices.UMad
	}
	for i, a := range c.Devices {
		pd := devs[a.Device]
		if !umad[pd.Pool] {
			continue
		}
		e := &spec.Devices[i].ContainerEdits
		for _, p := range append(append([]string(nil), pd.Dev.UMad...), pd.Dev.ISSM...) {
			e.DeviceNodes = append(e.DeviceNodes, &cdispec.DeviceNode{Path: p, Permissions: "rw"})
		}
	}
}

// refuseOpaqueConfig fails when the allocation carries opaque parameters for this driver
// that apply to one of its devices: the driver takes none, and ignoring them would give
// the pod something other than it asked for.
func refuseOpaqueConfig(a resourceapi.DeviceAllocationResult) error {
	for _, c := range a.Config {
		if c.Opaque == nil || c.Opaque.Driver != DriverName || !appliesToDriver(c.Requests, a.Results) {
			continue
		}
		from := "ResourceClaim's spec.devices.config"
		if c.Source == resourceapi.AllocationConfigSourceClass {
			from = "DeviceClass's spec.config"
		}
		return fmt.Errorf("opaque parameters for driver %s (from the %s) are not supported: the driver takes no configuration; remove them", DriverName, from)
	}
	return nil
}

// appliesToDriver reports whether a config for requests (empty: every request; a main
// request covers its subrequests) applies to a result of this driver.
func appliesToDriver(requests []string, results []resourceapi.DeviceRequestAllocationResult) bool {
	for _, r := range results {
		if r.Driver != DriverName {
			continue
		}
		if len(requests) == 0 {
			return true
		}
		main, _, _ := strings.Cut(r.Request, "/")
		for _, q := range requests {
			if q == r.Request || q == main {
				return true
			}
		}
	}
	return false
}

// markAdmin sets Admin on the claim's devices listed in a spec's admin annotation.
func markAdmin(c *preparedClaim, ann string) {
	if ann == "" {
		return
	}
	admin := map[string]bool{}
	for _, rd := range strings.Split(ann, ",") {
		admin[rd] = true
	}
	for i, a := range c.Devices {
		c.Devices[i].Admin = admin[a.Request+":"+a.Device]
	}
}
