//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The packet step's streams: the sample's rule (16 channel groups of 256 KiB heaps, the sync
// time and sample rate in the stream's items), 16 MiB each in 8 KiB packets, paced so that
// the emulated node keeps up; the lossy one drops every 20th packet (2048 % 20 != 0: not the
// last).
const (
	packetBytes     = 16 << 20
	packetSize      = 8 << 10
	packetDropEvery = 20
	packetRule      = "--protocol spead --spead-timestamp-id 0x1600 --spead-timestamp-step 2097152 --spead-channel-id 0x4103 --spead-channels 0:256:16 " +
		"--spead-heap-bytes 262144 --spead-sync-time-id 0x1027 --spead-sample-rate-id 0x1046"
	// The data-network address and interface of the node's Host-mode captures (veth1, as in
	// step 8), and the multicast group the second capture joins there.
	packetAddress = "198.18.0.2"
	packetIface   = "veth1"
	packetGroup   = "239.2.1.150"
	// The node's socket buffer cap for the step: the docs' advice for a packet capture.
	packetRmemMax = 64 << 20
)

// loadSPEADSample reads config/samples/ringcapture-spead.yaml.
func loadSPEADSample(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile("../../config/samples/ringcapture-spead.yaml")
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &u.Object); err != nil {
		t.Fatalf("parse the SPEAD sample RingCapture: %v", err)
	}
	u.SetNamespace(testNamespace)
	return u
}

// packetCapture creates the SPEAD sample made small, on the node's data network (Host
// mode): a ring of 8 × 1 MiB, one socket on port, no stop condition but the sender's
// stop heap, and reader, with udp changed by udp.
func packetCapture(t *testing.T, name, key string, port, metricsPort int64, udp map[string]any, reader []any) {
	t.Helper()
	u := loadSPEADSample(t)
	u.SetName(name)
	set := func(v any, path ...string) {
		if err := unstructured.SetNestedField(u.Object, v, path...); err != nil {
			t.Fatalf("set %v: %v", path, err)
		}
	}
	set(map[string]any{"key": key, "blockBytes": int64(1 << 20), "blocks": int64(8), "readers": int64(1)}, "spec", "ring")
	spec := map[string]any{"ports": []any{port}, "socketsPerPort": int64(1), "bufferBytes": int64(32 << 20), "reorderBlocks": int64(4)}
	for k, v := range udp {
		spec[k] = v
	}
	set(spec, "spec", "receiver", "udp")
	set(metricsPort, "spec", "receiver", "metricsPort")
	set(port+1000, "spec", "receiver", "port")
	set(map[string]any{"after": "Never"}, "spec", "receiver", "stop")
	set([]any{map[string]any{"name": "verify", "args": reader}}, "spec", "readers")
	if _, err := s.dyn.Resource(gvrRingCapture).Namespace(testNamespace).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create RingCapture %s: %v", name, err)
	}
	t.Cleanup(func() { deleteCaptureAndWait(t, name) })
}

// stepPacketsOutside is issue 53 on the cluster: senders outside the cluster (processes in
// the VM's own network namespace, as digitisers on the data network) stream SPEAD to two
// Host-mode captures at once: one unicast to its address, read back with every byte
// verified and no packet lost; one to a multicast group it joined on the data interface,
// with every 20th packet dropped by the sender, whose status counts exactly the packets and
// bytes lost. Both end at the senders' stream-stop heaps. A real Prometheus scrapes both
// receivers meanwhile, and every panel of the dashboard's packet row answers with data.
func stepPacketsOutside(t *testing.T) {
	raiseRmemMax(t)
	packetCapture(t, "spead-unicast", "5ead", 7150, 9150, map[string]any{"address": packetAddress, "cpus": "auto"},
		[]any{"ring", "read", "-k", "5ead", "--wait", "120s", "--verify", "7", "-s"})
	packetCapture(t, "spead-multicast", "5eae", 7152, 9152, map[string]any{"multicastGroups": []any{packetGroup}, "interface": packetIface},
		[]any{"ring", "read", "-k", "5eae", "--wait", "120s", "-s"})
	for _, name := range []string{"spead-unicast", "spead-multicast"} {
		waitCapture(t, name, 3*time.Minute, "Listening on the node's UDP ports, at its address or groups", func(u *unstructured.Unstructured) bool {
			ports, _, _ := unstructured.NestedSlice(u.Object, "status", "endpoint", "udpPorts")
			groups, _, _ := unstructured.NestedStringSlice(u.Object, "status", "endpoint", "multicastGroups")
			target := str(u, "status", "endpoint", "address") == packetAddress || len(groups) == 1 && groups[0] == packetGroup
			return str(u, "status", "phase") == "Listening" && len(ports) > 0 && target
		})
	}
	checkReceiveThreadPinned(t, "spead-unicast")
	prom := startPrometheus(t, packetTargets(t, "spead-unicast", "spead-multicast"))
	prom.waitScraped(t, 2*time.Minute)
	send := func(target, extra string) string {
		return fmt.Sprintf("$R send --connect %s %s --seed 7 --bytes %d --packet-bytes %d --rate 4M %s", target, packetRule, packetBytes, packetSize, extra)
	}
	script := fmt.Sprintf(`set -u
R=/mnt/host/bin/ringcap
%s > /tmp/spead-unicast.log 2>&1 & pu=$!
%s > /tmp/spead-multicast.log 2>&1 & pm=$!
wait $pu; ru=$?; wait $pm; rm=$?
sed 's/^/spead-unicast: /' /tmp/spead-unicast.log; sed 's/^/spead-multicast: /' /tmp/spead-multicast.log
exit $((ru | rm))
`, send(packetAddress+":7150", ""), send(packetGroup+":7152", fmt.Sprintf("--multicast-interface %s --drop-every %d", packetIface, packetDropEvery)))
	out, rc, err := guestRun("spead-senders", script, 5*time.Minute)
	t.Logf("SPEAD senders outside the cluster (exit %d):\n%s", rc, out)
	if err != nil || rc != 0 {
		t.Fatalf("SPEAD senders: exit %d, %v", rc, err)
	}
	checkPacketPanels(t, prom, "spead-unicast", "spead-multicast")
	uni := waitCapture(t, "spead-unicast", 3*time.Minute, "Succeeded", func(u *unstructured.Unstructured) bool { return str(u, "status", "phase") == "Succeeded" })
	uni = finalPacketCounts(uni, "spead-unicast")
	checkVerifiedRun(t, uni, senderLines(out, "spead-unicast"))
	checkPacketCounts(t, uni, senderLines(out, "spead-unicast"), 0)
	multi := waitCapture(t, "spead-multicast", 3*time.Minute, "Succeeded", func(u *unstructured.Unstructured) bool { return str(u, "status", "phase") == "Succeeded" })
	multi = finalPacketCounts(multi, "spead-multicast")
	checkPacketCounts(t, multi, senderLines(out, "spead-multicast"), packetDropEvery)
}

// checkReceiveThreadPinned reads from the receiver's log of capture name (udp.cpus: auto)
// that its receive thread was pinned to a CPU.
func checkReceiveThreadPinned(t *testing.T, name string) {
	t.Helper()
	u := waitCapture(t, name, time.Minute, "a pod", func(u *unstructured.Unstructured) bool { return str(u, "status", "pod") != "" })
	log := podLogs(t, testNamespace, str(u, "status", "pod"), "receiver")
	if !regexp.MustCompile(`msg="Listening for packets" .* cpus=[0-9]+`).MatchString(log) {
		t.Errorf("receiver of %s with udp.cpus auto: no pinned receive thread in its log:\n%s", name, log)
	}
}

// packetTargets are the scrape targets of the captures' receivers and of their node's device
// plugin.
func packetTargets(t *testing.T, captures ...string) []promTarget {
	t.Helper()
	var tg []promTarget
	for i, name := range captures {
		u := waitCapture(t, name, time.Minute, "a pod", func(u *unstructured.Unstructured) bool { return str(u, "status", "pod") != "" })
		all := captureTargets(t, str(u, "status", "pod"))
		if i > 0 {
			all = all[:1] // the receiver alone: the node's plugin is in already
		}
		tg = append(tg, all...)
	}
	return tg
}

// checkPacketPanels waits until every panel of the dashboard's packet row answers with data
// for the captures' pods: rates over the stream just sent, which a range query still has
// once a receiver has ended.
func checkPacketPanels(t *testing.T, p *prom, captures ...string) {
	t.Helper()
	var pods []string
	for _, name := range captures {
		u, err := getCapture(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		pods = append(pods, str(u, "status", "pod"))
	}
	all := dashboardQueries(t, testNamespace, strings.Join(pods, "|"))
	queries := map[string][]string{}
	for _, title := range rowPanels(t, "Packet captures") {
		queries[title] = all[title]
	}
	waitFor(t, time.Minute, "every panel of the packet row with data", func(context.Context) (bool, string, error) {
		empty, err := panelsWithoutData(p, queries, nil)
		if err != nil {
			return retry(err)
		}
		if len(empty) == 0 {
			return true, "", nil
		}
		tg, err := p.targets()
		return false, fmt.Sprintf("panels without data: %v; targets: %s %v", empty, tg, err), nil
	})
}

// raiseRmemMax sets the node's net.core.rmem_max to packetRmemMax for the step (a pod
// cannot: the setting is the machine's), as docs/packet-ingest.md tells users, and restores
// it after.
func raiseRmemMax(t *testing.T) {
	out, rc, err := guestRun("rmem-max", fmt.Sprintf("cat /proc/sys/net/core/rmem_max; sysctl -qw net.core.rmem_max=%d", packetRmemMax), time.Minute)
	old, perr := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || rc != 0 || perr != nil {
		t.Fatalf("raise net.core.rmem_max on the node: exit %d, %v, %q", rc, err, out)
	}
	t.Cleanup(func() {
		if _, rc, err := guestRun("rmem-max-restore", fmt.Sprintf("sysctl -qw net.core.rmem_max=%d", old), time.Minute); err != nil || rc != 0 {
			t.Errorf("restore net.core.rmem_max=%d on the node: exit %d, %v", old, rc, err)
		}
	})
}

// senderLines are the lines of one sender in the senders' output, without the prefix.
func senderLines(out, name string) string {
	var own []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, name+": ") {
			own = append(own, strings.TrimPrefix(l, name+": "))
		}
	}
	return strings.Join(own, "\n")
}

// finalPacketCounts gives the operator up to 30 s to copy the receiver's final counts (its
// summary) into status.packets after Succeeded: it returns the capture once they account
// for every byte, or as it is then.
func finalPacketCounts(end *unstructured.Unstructured, name string) *unstructured.Unstructured {
	_, _, _ = poll(30*time.Second, func(ctx context.Context) (bool, string, error) {
		u, err := getCapture(ctx, name)
		if err != nil {
			return retry(err)
		}
		end = u
		return num(u, "status", "packets", "receivedBytes")+num(u, "status", "packets", "zeroFilledBytes") >= packetBytes, captureSummary(u), nil
	})
	return end
}

// checkPacketCounts checks status.packets against the sender's summary: every packet sent
// received, the stop heap counted as control, and the packets the sender dropped (every
// dropEvery-th; 0: none) exactly the zero-filled bytes, nothing else lost.
func checkPacketCounts(t *testing.T, end *unstructured.Unstructured, senderLog string, dropEvery int64) {
	t.Helper()
	m := regexp.MustCompile(`send: bytes=(\d+) packets=(\d+) payload_bytes=(\d+) dropped_packets=(\d+) dropped_bytes=(\d+) duplicated_packets=0 stop_heaps=1 `).FindStringSubmatch(senderLog)
	if m == nil {
		t.Fatalf("%s: sender printed no packet summary:\n%s", end.GetName(), senderLog)
	}
	n := func(i int) int64 { v, _ := strconv.ParseInt(m[i], 10, 64); return v }
	total := int64(packetBytes / packetSize)
	if dropped := n(4); n(2) != total-dropped || dropEvery > 0 && dropped != total/dropEvery || dropEvery == 0 && dropped != 0 {
		t.Errorf("%s: sender sent %d packets and dropped %d of %d", end.GetName(), n(2), dropped, total)
	}
	pk := func(f string) int64 { return num(end, "status", "packets", f) }
	want := map[string]int64{"packets": n(2) + 1, "receivedPackets": n(2), "receivedBytes": n(3), "control": 1, "zeroFilledBytes": n(5),
		"late": 0, "outOfWindow": 0, "duplicate": 0, "malformed": 0, "invalid": 0, "outOfRange": 0, "beforeStart": 0, "kernelDrops": 0, "truncated": 0}
	for f, w := range want {
		if pk(f) != w {
			t.Errorf("%s: status.packets.%s = %d, want %d (packets %v)", end.GetName(), f, pk(f), w, end.Object["status"].(map[string]any)["packets"])
		}
	}
	t.Logf("%s: %d SPEAD packets sent from outside the cluster, %d received, %d bytes zero-filled as the sender dropped them", end.GetName(), n(2), pk("receivedPackets"), pk("zeroFilledBytes"))
}
