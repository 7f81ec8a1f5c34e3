package dra

import (
	"fmt"

	"github.com/ringcap/ringcap/internal/plugin"
)

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
