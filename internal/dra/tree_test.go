package dra

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/pkg/rdma"
	"github.com/ringcap/ringcap/pkg/rdma/rdmatest"
)

// hca is an RDMA device of a tree written by writeTree.
type hca struct {
	name   string
	pci    string // PCI function ("0000:05:00.0") under mlx4_core; "" for a software device bound to its first port's netdev
	uverbs int
	ports  []hcaPort // ports 1, 2, ...
}

// hcaPort is a port of an hca: ACTIVE or DOWN, on its netdev (dev_port = port - 1),
// with a link-local GID at index 0 and, on an Ethernet port with ip4 set, that IPv4
// address's RoCE v2 GID at index 1.
type hcaPort struct {
	state     string
	linkLayer string
	netdev    string
	ip4       string
}

// writeTree writes a sysfs and /dev tree with the devices, laid out as the kernel lays
// them out (class/infiniband links into devices/, the PCI function's net/ entries),
// and returns its roots.
func writeTree(t *testing.T, devs ...hca) rdma.Roots {
	t.Helper()
	dir := t.TempDir()
	roots := treeRoots(dir)
	for _, d := range devs {
		writeHCA(t, roots, d)
	}
	rdmatest.WriteFile(t, filepath.Join(roots.Dev, "infiniband/rdma_cm"), "")
	return roots
}

func writeHCA(t *testing.T, roots rdma.Roots, d hca) {
	t.Helper()
	sys := roots.Sys
	rel := "devices/virtual/infiniband/" + d.name
	if d.pci != "" {
		fn := "devices/pci0000:00/0000:00:03.0/" + d.pci
		rel = fn + "/infiniband/" + d.name
		drv := filepath.Join(sys, "bus/pci/drivers/mlx4_core")
		mkdir(t, drv)
		symlink(t, drv, filepath.Join(sys, fn, "driver"))
		rdmatest.WriteFile(t, filepath.Join(sys, fn, "vendor"), "0x15b3")
		rdmatest.WriteFile(t, filepath.Join(sys, fn, "device"), "0x1007")
		rdmatest.WriteFile(t, filepath.Join(sys, fn, "numa_node"), "0")
		mkdir(t, filepath.Join(sys, rel))
		symlink(t, filepath.Join(sys, fn), filepath.Join(sys, rel, "device"))
		for i, p := range d.ports {
			nd := filepath.Join(sys, fn, "net", p.netdev)
			rdmatest.WriteFile(t, filepath.Join(nd, "dev_port"), fmt.Sprint(i))
			rdmatest.WriteFile(t, filepath.Join(nd, "mtu"), "9000")
			symlink(t, nd, filepath.Join(sys, "class/net", p.netdev))
		}
	} else {
		rdmatest.WriteFile(t, filepath.Join(sys, rel, "parent"), d.ports[0].netdev)
		rdmatest.WriteFile(t, filepath.Join(sys, "class/net", d.ports[0].netdev, "mtu"), "1500")
	}
	dev := filepath.Join(sys, rel)
	rdmatest.WriteFile(t, filepath.Join(dev, "node_guid"), fmt.Sprintf("0002:c903:0000:%04x", d.uverbs))
	rdmatest.WriteFile(t, filepath.Join(dev, "node_type"), "1: CA")
	for i, p := range d.ports {
		writePort(t, filepath.Join(dev, "ports", fmt.Sprint(i+1)), p)
	}
	symlink(t, dev, filepath.Join(sys, "class/infiniband", d.name))
	uv := fmt.Sprintf("uverbs%d", d.uverbs)
	rdmatest.WriteFile(t, filepath.Join(sys, "class/infiniband_verbs", uv, "ibdev"), d.name)
	rdmatest.WriteFile(t, filepath.Join(roots.Dev, "infiniband", uv), "")
}

func writePort(t *testing.T, dir string, p hcaPort) {
	t.Helper()
	rdmatest.WriteFile(t, filepath.Join(dir, "link_layer"), p.linkLayer)
	rdmatest.WriteFile(t, filepath.Join(dir, "rate"), "40 Gb/sec (4X QDR)")
	gid := func(i int, ip, typ, ndev string) {
		rdmatest.WriteFile(t, filepath.Join(dir, "gids", fmt.Sprint(i)), sysfsGID(net.ParseIP(ip)))
		rdmatest.WriteFile(t, filepath.Join(dir, "gid_attrs/types", fmt.Sprint(i)), typ)
		if ndev != "" {
			rdmatest.WriteFile(t, filepath.Join(dir, "gid_attrs/ndevs", fmt.Sprint(i)), ndev)
		}
	}
	if p.linkLayer == rdma.LinkLayerInfiniBand {
		gid(0, "fe80::2:c903:0:1", rdma.GIDTypeRoCEv1, "")
	} else {
		gid(0, "fe80::2:c9ff:fe00:1", rdma.GIDTypeRoCEv2, p.netdev)
		if p.ip4 != "" {
			gid(1, p.ip4, rdma.GIDTypeRoCEv2, p.netdev)
		}
	}
	// The state last: setState rewrites it.
	rdmatest.WriteFile(t, filepath.Join(dir, "state"), "1: DOWN")
	rdmatest.WriteFile(t, filepath.Join(dir, "phys_state"), "3: Disabled")
	if p.state == "ACTIVE" {
		rdmatest.WriteFile(t, filepath.Join(dir, "state"), "4: ACTIVE")
		rdmatest.WriteFile(t, filepath.Join(dir, "phys_state"), "5: LinkUp")
	}
}

// sysfsGID writes a GID as sysfs prints it: eight groups of four hex digits.
func sysfsGID(ip net.IP) string {
	b := ip.To16()
	parts := make([]string, 8)
	for i := range parts {
		parts[i] = fmt.Sprintf("%02x%02x", b[2*i], b[2*i+1])
	}
	return strings.Join(parts, ":")
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// symlink links link to target with a relative path, as sysfs does.
func symlink(t *testing.T, target, link string) {
	t.Helper()
	mkdir(t, filepath.Dir(link))
	rel, err := filepath.Rel(filepath.Dir(link), target)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(rel, link); err != nil {
		t.Fatal(err)
	}
}

// connectX3 is a two-port mlx4 HCA (one ibdev, one uverbs device) with both ports
// ACTIVE on RoCE: port 1 on eth2 (10.1.0.1), port 2 on eth3 (10.2.0.1).
func connectX3() hca {
	return hca{name: "mlx4_0", pci: "0000:05:00.0", uverbs: 3, ports: []hcaPort{
		{state: "ACTIVE", linkLayer: rdma.LinkLayerEthernet, netdev: "eth2", ip4: "10.1.0.1"},
		{state: "ACTIVE", linkLayer: rdma.LinkLayerEthernet, netdev: "eth3", ip4: "10.2.0.1"},
	}}
}

// softRoCE is a single-port software device on netdev with an IPv4 GID.
func softRoCE(name string, uverbs int, netdev, ip4 string) hca {
	return hca{name: name, uverbs: uverbs, ports: []hcaPort{{state: "ACTIVE", linkLayer: rdma.LinkLayerEthernet, netdev: netdev, ip4: ip4}}}
}
