package rdma

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/internal/testkit"
)

// devinfo is what `ibv_devinfo -v` says about a device (the fields sysfs also has).
type devinfo struct {
	name, nodeGUID, fwVer string
	ports                 map[int]*devinfoPort
}

type devinfoPort struct {
	state, physState, linkLayer string
	activeMTU                   int
	gids                        map[int]devinfoGID
}

type devinfoGID struct {
	ip  net.IP
	typ string
}

var (
	reKV  = regexp.MustCompile(`^\s*([a-z_]+):\s*(.*)$`)
	reGID = regexp.MustCompile(`^\s*GID\[\s*(\d+)\]:\s*([0-9a-fA-F:.]+),\s*(.+)$`)
	reNum = regexp.MustCompile(`^(\S+)\s+\((\d+)\)$`)
)

// parseDevinfo parses the output of `ibv_devinfo -v`.
func parseDevinfo(text string) (map[string]*devinfo, error) {
	out := map[string]*devinfo{}
	var cur *devinfo
	var port *devinfoPort
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if m := reGID.FindStringSubmatch(line); m != nil {
			if port == nil {
				return nil, fmt.Errorf("GID line outside a port: %q", line)
			}
			idx, _ := strconv.Atoi(m[1])
			ip := net.ParseIP(m[2])
			if ip == nil {
				return nil, fmt.Errorf("bad GID in %q", line)
			}
			port.gids[idx] = devinfoGID{ip: ip, typ: strings.TrimSpace(m[3])}
			continue
		}
		m := reKV.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		k, v := m[1], strings.TrimSpace(m[2])
		switch {
		case k == "hca_id":
			cur = &devinfo{name: v, ports: map[int]*devinfoPort{}}
			out[v] = cur
			port = nil
		case cur == nil:
		case k == "node_guid":
			cur.nodeGUID = v
		case k == "fw_ver":
			cur.fwVer = v
		case k == "port":
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("bad port line %q", line)
			}
			port = &devinfoPort{gids: map[int]devinfoGID{}}
			cur.ports[n] = port
		case port == nil:
		case k == "state":
			port.state = strings.TrimPrefix(numName(v), "PORT_")
		case k == "phys_state":
			port.physState = numName(v)
		case k == "link_layer":
			port.linkLayer = v
		case k == "active_mtu":
			port.activeMTU, _ = strconv.Atoi(numName(v))
		}
	}
	return out, sc.Err()
}

// numName turns "PORT_ACTIVE (4)" into "PORT_ACTIVE".
func numName(v string) string {
	if m := reNum.FindStringSubmatch(v); m != nil {
		return m[1]
	}
	return v
}

// canon compares sysfs and ibv_devinfo spellings of a state ("LinkUp" vs "LINK_UP").
func canon(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }

// compareWithDevinfo checks that discovery agrees with ibv_devinfo -v on every
// device, port and GID, and with the GID files under sys.
func compareWithDevinfo(t *testing.T, devs []Device, info map[string]*devinfo, sys string) {
	t.Helper()
	if len(devs) != len(info) || len(devs) == 0 {
		t.Fatalf("discovered %v, ibv_devinfo lists %d devices", names(devs), len(info))
	}
	for _, d := range devs {
		in, ok := info[d.Name]
		if !ok {
			t.Errorf("ibv_devinfo does not list %s", d.Name)
			continue
		}
		if d.NodeGUID != in.nodeGUID {
			t.Errorf("%s node GUID %s, ibv_devinfo %s", d.Name, d.NodeGUID, in.nodeGUID)
		}
		// rxe has an empty fw_ver attribute; ibv_devinfo formats the raw 0 as 0.0.0.
		if d.FirmwareVersion != in.fwVer && (d.FirmwareVersion != "" || in.fwVer != "0.0.0") {
			t.Errorf("%s firmware %q, ibv_devinfo %q", d.Name, d.FirmwareVersion, in.fwVer)
		}
		if len(d.Ports) != len(in.ports) {
			t.Errorf("%s: %d ports, ibv_devinfo %d", d.Name, len(d.Ports), len(in.ports))
		}
		for _, p := range d.Ports {
			ip, ok := in.ports[p.Num]
			if !ok {
				t.Errorf("%s port %d not in ibv_devinfo", d.Name, p.Num)
				continue
			}
			if canon(p.State) != canon(ip.state) || canon(p.PhysState) != canon(ip.physState) || p.LinkLayer != ip.linkLayer {
				t.Errorf("%s port %d: %s/%s/%s, ibv_devinfo %s/%s/%s", d.Name, p.Num, p.State, p.PhysState, p.LinkLayer, ip.state, ip.physState, ip.linkLayer)
			}
			if p.ActiveMTU != ip.activeMTU {
				t.Errorf("%s port %d active MTU %d, ibv_devinfo %d", d.Name, p.Num, p.ActiveMTU, ip.activeMTU)
			}
			if len(p.GIDs) != len(ip.gids) {
				t.Errorf("%s port %d: %d GIDs, ibv_devinfo %d", d.Name, p.Num, len(p.GIDs), len(ip.gids))
			}
			for _, g := range p.GIDs {
				ig, ok := ip.gids[g.Index]
				if !ok || !ig.ip.Equal(g.GID) || ig.typ != g.Type {
					t.Errorf("%s port %d GID %d = %s %s, ibv_devinfo %v %s", d.Name, p.Num, g.Index, g.GID, g.Type, ig.ip, ig.typ)
				}
			}
			// The GID files themselves: every non-zero entry, nothing else.
			dir := filepath.Join(sys, "class/infiniband", d.Name, "ports", strconv.Itoa(p.Num), "gids")
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var want []int
			for _, e := range ents {
				b, err := os.ReadFile(filepath.Join(dir, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				if s := strings.TrimSpace(string(b)); s != "0000:0000:0000:0000:0000:0000:0000:0000" {
					i, _ := strconv.Atoi(e.Name())
					want = append(want, i)
				}
			}
			sort.Ints(want)
			var got []int
			for _, g := range p.GIDs {
				got = append(got, g.Index)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s port %d GID indices %v, GID files %v", d.Name, p.Num, got, want)
			}
		}
	}
}

// TestDiscoverCapturedRXE runs discovery on the sysfs tree captured from the real
// Soft-RoCE devices in the VM (testdata/capture-sysfs.sh) and compares it with the
// ibv_devinfo -v output captured in the same boot.
func TestDiscoverCapturedRXE(t *testing.T) {
	t.Parallel()
	testkit.HostOnly(t)
	r := Roots{Sys: "testdata/rxe-vm/sys", Dev: "testdata/rxe-vm/dev"}
	devs, skipped, err := Discover(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 0 {
		t.Errorf("skipped: %v", skipped)
	}
	b, err := os.ReadFile("testdata/rxe-vm/ibv_devinfo-v.txt")
	if err != nil {
		t.Fatal(err)
	}
	info, err := parseDevinfo(string(b))
	if err != nil {
		t.Fatal(err)
	}
	compareWithDevinfo(t, devs, info, r.Sys)
	checkRXE(t, devs)
}

// checkRXE checks what is known about the VM's two rxe devices (hack/vm: rxe0 on
// veth0 198.18.0.1, rxe1 on veth1 198.18.0.2, MTU 9000).
func checkRXE(t *testing.T, devs []Device) {
	t.Helper()
	for i, name := range []string{"rxe0", "rxe1"} {
		d := byName(t, devs, name)
		nd := fmt.Sprintf("veth%d", i)
		if d.Driver != "rdma_rxe" || d.PCIAddress != "" || d.Parent != nd || d.NodeType != "CA" || d.NUMANode != -1 {
			t.Errorf("%s = %+v", name, d)
		}
		if !strings.HasPrefix(d.UVerbs, "/dev/infiniband/uverbs") || d.RDMACM != "/dev/infiniband/rdma_cm" {
			t.Errorf("%s char devices %v", name, d.CharDevices)
		}
		p := d.Ports[0]
		if !p.Active() || !p.RoCE() || p.ActiveMTU != 4096 || fmt.Sprint(p.Netdevs) != "["+nd+"]" {
			t.Errorf("%s port %+v", name, p)
		}
		g, reason, err := ChooseGID(p, GIDPolicy{})
		want := net.ParseIP(fmt.Sprintf("198.18.0.%d", i+1))
		if err != nil || !g.GID.Equal(want) || g.Netdev != nd || g.Type != GIDTypeRoCEv2 {
			t.Errorf("%s chosen GID %+v (%s) %v, want %s on %s", name, g, reason, err, want, nd)
		}
	}
}

func TestParseDevinfo(t *testing.T) {
	t.Parallel()
	info, err := parseDevinfo("hca_id:\tmlx5_0\n\tnode_guid:\t\t0c42:a103:0065:4f2a\n\tfw_ver:\t16.35.2000\n\t\tport:\t1\n" +
		"\t\t\tstate:\t\t\tPORT_DOWN (1)\n\t\t\tactive_mtu:\t\t1024 (3)\n\t\t\tlink_layer:\t\tEthernet\n" +
		"\t\t\tphys_state:\t\tDISABLED (3)\n\t\t\tGID[  3]:\t\t::ffff:10.0.0.5, RoCE v2\n")
	if err != nil {
		t.Fatal(err)
	}
	p := info["mlx5_0"].ports[1]
	if info["mlx5_0"].nodeGUID != "0c42:a103:0065:4f2a" || p.state != "DOWN" || p.physState != "DISABLED" || p.activeMTU != 1024 ||
		!p.gids[3].ip.Equal(net.ParseIP("10.0.0.5")) || p.gids[3].typ != "RoCE v2" {
		t.Errorf("parsed %+v %+v", info["mlx5_0"], p)
	}
}
