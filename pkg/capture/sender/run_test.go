package sender

import (
	"log/slog"
	"testing"

	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/rdma"
)

// An ofi sender posts as on a NIC (no driver: one posting thread), also when
// its domain names a software RDMA device (verbs;ofi_rxm's rxe0); the tree is
// sysfs captured in the VM, where rxe0's driver is rdma_rxe.
func TestOFIDomainPostsAsOnANIC(t *testing.T) {
	r := rdma.Roots{Sys: "../../rdma/testdata/rxe-vm/sys", Dev: "../../rdma/testdata/rxe-vm/dev"}
	devs, _, err := rdma.Discover(r)
	if err != nil || driverOf(devs, "rxe0") != "rdma_rxe" {
		t.Fatalf("the captured tree: rxe0's driver %q (%v), want rdma_rxe", driverOf(devs, "rxe0"), err)
	}
	for _, domain := range []string{"rxe0", "lo", ""} {
		s := Stream{Roots: r, Fabric: wire.Fabric{Transport: wire.TransportOFI, Provider: "verbs;ofi_rxm"}, Domain: domain}
		dev, err := s.chooseDevice(slog.Default())
		if err != nil {
			t.Fatalf("domain %q: %v", domain, err)
		}
		if dev.driver != "" || dev.cfg.Domain != domain {
			t.Errorf("domain %q: driver %q domain %q, want no driver and the domain", domain, dev.driver, dev.cfg.Domain)
		}
	}
}
