//go:build vm

package capture

// The receiver's choice of listen address and GID on real Soft-RoCE (issue 33): with
// --listen-on rdma it listens on the address of the device plugin's GID; with --listen-on
// attachment it listens on the attachment's interface (a macvlan upper device of the RDMA
// netdev) and uses that interface's own RoCE v2 GID, not the plugin's.

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/test/vm/vmtest"
)

// statusOf reads a receiver's /status.
func statusOf(t *testing.T, metricsAddr string) statusdoc.Status {
	t.Helper()
	resp, err := http.Get("http://" + metricsAddr + "/status")
	if err != nil {
		t.Fatalf("get /status: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var st statusdoc.Status
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("/status %s: %v", b, err)
	}
	return st
}

// startRecvEnv starts `ringcap recv` with the device plugin's environment env and
// waits until it listens; it returns the process and its metrics address.
func startRecvEnv(t *testing.T, bin, key string, env []string, args ...string) (*proc, string) {
	t.Helper()
	metrics := net.JoinHostPort("127.0.0.1", strconv.Itoa(vmPort()))
	all := append(append([]string{}, env...), bin, "recv", "-k", key, "--metrics-addr", metrics, "--stop-observations", "1",
		"--summary-file", filepath.Join(t.TempDir(), "summary.json"))
	recv := start(t, "env", append(all, args...)...)
	waitListening(t, metrics, recv)
	return recv, metrics
}

func stopRecv(t *testing.T, recv *proc) {
	t.Helper()
	_ = recv.cmd.Process.Signal(syscall.SIGTERM)
	if err := recv.wait(t, time.Minute); err != nil {
		t.Errorf("recv after SIGTERM: %v\n%s", err, recv.output())
	}
}

// Host mode: the plugin gave rxe1 and its GID 1 (198.18.0.2 on veth1); the receiver listens
// there only, and a sender on the data network streams to it.
func TestVMListenOnRDMA(t *testing.T) {
	vmtest.Require(t)
	bin := vmtest.Binary(t, "ringcap")
	key := vmKey()
	ringCreate(t, bin, key, 4, 256<<10)
	port := strconv.Itoa(vmPort())
	env := []string{"RINGCAP_RDMA_DEVICE=" + vmtest.Device1, "RINGCAP_RDMA_PORT=1", "RINGCAP_GID_INDEX=1"}
	recv, metrics := startRecvEnv(t, bin, key, env, "--listen", ":"+port, "--listen-on", "rdma", "--allowed-senders", "listen-subnet")
	ep := statusOf(t, metrics).Endpoint
	if ep.Address != vmtest.IP1 || ep.Netdev != "veth1" || !strings.Contains(ep.AddressReason, "the address of veth1") ||
		strings.Join(ep.AllowedSenders, ",") != "198.18.0.0/24" {
		t.Fatalf("endpoint %+v, want %s on veth1 allowing 198.18.0.0/24\n%s", ep, vmtest.IP1, recv.output())
	}
	// Only that address: not the loopback one.
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, 5*time.Second); err == nil {
		_ = c.Close()
		t.Errorf("the receiver accepts on 127.0.0.1:%s: it listens on more than the RDMA netdev's address", port)
	}
	verifyObservation(t, bin, key, net.JoinHostPort(vmtest.IP1, port), 3<<20, 5)
	if err := recv.wait(t, time.Minute); err != nil {
		t.Fatalf("recv: %v\n%s", err, recv.output())
	}
}

// Attachment mode: the pod's data-network interface is a macvlan upper device of the RDMA
// netdev (what Debian's macvlan CNI plugin, alone or under Multus, creates), which has
// RoCE GIDs of its own. The receiver listens on its address and uses its GID, not the
// device plugin's GID 1 of veth1. No data is sent here: Soft-RoCE does not take RoCE
// packets addressed to a macvlan's GID (docs/network.md), which RDMA NICs do; the stream
// is TestVMAttachmentStream (build tag vmattachment, make test-vm-attachment).
func TestVMListenOnAttachment(t *testing.T) {
	vmtest.Require(t)
	bin := vmtest.Binary(t, "ringcap")
	addMacvlan(t, attachMV, attachIP)
	recv, _, _ := startAttachmentRecv(t, bin, vmKey(), strconv.Itoa(vmPort()))
	stopRecv(t, recv)
}

// The macvlan upper device of veth1 the Attachment-mode tests give the receiver.
const attachMV, attachIP = "mv40", "198.18.0.40"

// addMacvlan creates mv, a bridge-mode macvlan upper device of veth1 with ip/24, and
// deletes it when t ends.
func addMacvlan(t *testing.T, mv, ip string) {
	t.Helper()
	if out, err := run(t, time.Minute, "modprobe", "macvlan"); err != nil {
		t.Fatalf("modprobe macvlan: %v\n%s", err, out)
	}
	ipCmds(t,
		[]string{"link", "add", mv, "link", vmtest.Netdev1, "type", "macvlan", "mode", "bridge"},
		[]string{"addr", "add", ip + "/24", "dev", mv},
		[]string{"link", "set", mv, "up"})
	t.Cleanup(func() { _, _ = run(t, time.Minute, "/usr/sbin/ip", "link", "del", mv) })
}

// ipCmds runs iproute2's ip with each argument list, failing t at the first that fails.
func ipCmds(t *testing.T, cmds ...[]string) {
	t.Helper()
	for _, c := range cmds {
		if out, err := run(t, time.Minute, "/usr/sbin/ip", c...); err != nil {
			t.Fatalf("ip %v: %v\n%s", c, err, out)
		}
	}
}

// startAttachmentRecv creates a ring under key and starts a receiver for one observation
// with --listen-on attachment=obs/data, where the network-status annotation names
// attachMV, and checks that it listens on attachIP:port with attachMV's own RoCE v2 GID.
// It returns the receiver, its metrics address and that GID's index.
func startAttachmentRecv(t *testing.T, bin, key, port string) (*proc, string, int) {
	t.Helper()
	gid := gidOf(t, attachIP, attachMV)
	ringCreate(t, bin, key, 4, 256<<10)
	env := []string{"RINGCAP_RDMA_DEVICE=" + vmtest.Device1, "RINGCAP_RDMA_PORT=1", "RINGCAP_GID_INDEX=1",
		`RINGCAP_NETWORK_STATUS=[{"name":"e2e","interface":"eth0","default":true},{"name":"obs/data","interface":"` + attachMV + `","ips":["` + attachIP + `"]}]`}
	recv, metrics := startRecvEnv(t, bin, key, env, "--listen", ":"+port, "--listen-on", "attachment=obs/data", "--allowed-senders", "listen-subnet")
	ep := statusOf(t, metrics).Endpoint
	if ep.Address != attachIP || ep.Netdev != attachMV || ep.GIDIndex == nil || *ep.GIDIndex != gid || ep.GID != attachIP ||
		!strings.Contains(ep.AddressReason, "interface "+attachMV+" of attachment obs/data (from the pod's network-status annotation)") {
		t.Fatalf("endpoint %+v, want %s on %s with its GID %d\n%s", ep, attachIP, attachMV, gid, recv.output())
	}
	t.Logf("attachment endpoint: %s GID %d %s on %s (%s; %s)", ep.Address, *ep.GIDIndex, ep.GID, ep.Netdev, ep.AddressReason, ep.GIDReason)
	return recv, metrics, gid
}

// gidOf waits for rxe1 port 1 to have a RoCE v2 GID of ip on netdev and returns its index.
func gidOf(t *testing.T, ip, netdev string) int {
	t.Helper()
	port := "/sys/class/infiniband/" + vmtest.Device1 + "/ports/1"
	want := net.ParseIP(ip).To16()
	var table []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		table = table[:0]
		for i := 0; i < 16; i++ {
			g, err := os.ReadFile(port + "/gids/" + strconv.Itoa(i))
			if err != nil {
				break
			}
			nd, _ := os.ReadFile(port + "/gid_attrs/ndevs/" + strconv.Itoa(i))
			ty, _ := os.ReadFile(port + "/gid_attrs/types/" + strconv.Itoa(i))
			gs, nds := strings.TrimSpace(string(g)), strings.TrimSpace(string(nd))
			table = append(table, strconv.Itoa(i)+" "+gs+" "+nds+" "+strings.TrimSpace(string(ty)))
			if ip16 := net.ParseIP(gs); ip16 != nil && ip16.Equal(want) && nds == netdev && strings.Contains(string(ty), "RoCE v2") {
				return i
			}
		}
	}
	t.Fatalf("no RoCE v2 GID %s on %s in %s's table:\n%s", ip, netdev, vmtest.Device1, strings.Join(table, "\n"))
	return -1
}
