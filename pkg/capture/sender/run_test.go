package sender

import (
	"testing"

	"github.com/ringcap/ringcap/pkg/rdma"
)

// A libfabric domain that names an RDMA device (verbs;ofi_rxm's rxe0) has
// that device's driver, so that posting is chosen as for verbs on it; any
// other domain, or none, has none. The tree is sysfs captured in the VM.
func TestDomainDriver(t *testing.T) {
	r := rdma.Roots{Sys: "../../rdma/testdata/rxe-vm/sys", Dev: "../../rdma/testdata/rxe-vm/dev"}
	for _, c := range []struct {
		roots  rdma.Roots
		domain string
		want   string
	}{
		{r, "rxe0", "rdma_rxe"},
		{r, "rxe1", "rdma_rxe"},
		{r, "lo", ""},
		{r, "", ""},
		{rdma.Roots{Sys: t.TempDir(), Dev: t.TempDir()}, "rxe0", ""},
	} {
		if got := domainDriver(c.roots, c.domain); got != c.want {
			t.Errorf("domain %q under %s: driver %q, want %q", c.domain, c.roots.Sys, got, c.want)
		}
	}
}
