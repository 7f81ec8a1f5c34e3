//go:build vm

package rdma

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/test/vm/vmtest"
)

// TestVMDiscoveryMatchesDevinfo: in the Soft-RoCE VM, discovery of the real rxe
// devices agrees with `ibv_devinfo -v`, with the GID files and with the uverbs
// devices' ibdev attributes.
func TestVMDiscoveryMatchesDevinfo(t *testing.T) {
	vmtest.Require(t)
	devs, skipped, err := Discover(DefaultRoots)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 0 {
		t.Errorf("skipped: %v", skipped)
	}
	out, err := exec.Command("ibv_devinfo", "-v").CombinedOutput()
	if err != nil {
		t.Fatalf("ibv_devinfo -v: %v\n%s", err, out)
	}
	info, err := parseDevinfo(string(out))
	if err != nil {
		t.Fatal(err)
	}
	compareWithDevinfo(t, devs, info, "/sys")
	checkRXE(t, devs)

	for _, d := range devs {
		b, err := os.ReadFile(filepath.Join("/sys/class/infiniband_verbs", filepath.Base(d.UVerbs), "ibdev"))
		if err != nil || strings.TrimSpace(string(b)) != d.Name {
			t.Errorf("%s: %s/ibdev = %q, %v", d.Name, d.UVerbs, b, err)
		}
		if _, err := os.Stat(d.UVerbs); err != nil {
			t.Errorf("%s: %v", d.Name, err)
		}
		t.Logf("%s: guid %s driver %s uverbs %s port %d %s mtu %d netdevs %v gids %d", d.Name, d.NodeGUID, d.Driver,
			d.UVerbs, d.Ports[0].Num, d.Ports[0].State, d.Ports[0].ActiveMTU, d.Ports[0].Netdevs, len(d.Ports[0].GIDs))
	}
}

// Every live rxe port's hardware counters read as numbers, with the packet counters rxe
// keeps (rdma_rxe's hw_counters: sent_pkts, rcvd_pkts, duplicate_request, ...).
func TestVMPortCountersOfLiveRXE(t *testing.T) {
	vmtest.Require(t)
	devs, _, err := Discover(DefaultRoots)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		for _, p := range d.Ports {
			cs, skipped, err := PortCounters(DefaultRoots, d.Name, p.Num)
			if err != nil || len(skipped) != 0 {
				t.Errorf("%s port %d: %v, skipped %q", d.Name, p.Num, err, skipped)
				continue
			}
			names := map[string]bool{}
			for _, c := range cs {
				names[c.Source+"/"+c.Name] = true
			}
			for _, want := range []string{"hw_counters/sent_pkts", "hw_counters/rcvd_pkts", "hw_counters/duplicate_request"} {
				if !names[want] {
					t.Errorf("%s port %d has no %s among %d counters", d.Name, p.Num, want, len(cs))
				}
			}
		}
	}
}
