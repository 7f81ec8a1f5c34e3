//go:build e2e

package e2e

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The SPEAD step's stream: the sample's rule (16 channel groups of 256 KiB
// heaps, the sync time and sample rate in the stream's items), 32 MiB in
// 8 KiB packets, paced so that a slow node's UDP path keeps up.
const (
	speadCapture = "spead-e2e"
	speadKey     = "5ead"
	speadBytes   = 32 << 20
	speadPacket  = 8 << 10
	speadRule    = "--protocol spead --spead-timestamp-id 0x1600 --spead-timestamp-step 2097152 --spead-channel-id 0x4103 --spead-channels 0:256:16 " +
		"--spead-heap-bytes 262144 --spead-sync-time-id 0x1027 --spead-sample-rate-id 0x1046"
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

// speadCaptureObject is the SPEAD sample made small and local: Pod network,
// one unicast port and socket, a ring of 8 × 1 MiB, a stop after the bytes
// sent, and a reader verifying the pattern.
func speadCaptureObject(t *testing.T) *unstructured.Unstructured {
	u := loadSPEADSample(t)
	u.SetName(speadCapture)
	set := func(v any, path ...string) {
		if err := unstructured.SetNestedField(u.Object, v, path...); err != nil {
			t.Fatalf("set %v: %v", path, err)
		}
	}
	set("Pod", "spec", "network", "mode")
	set(map[string]any{"key": speadKey, "blockBytes": int64(1 << 20), "blocks": int64(8), "readers": int64(1)}, "spec", "ring")
	set(map[string]any{"ports": []any{int64(7148)}, "socketsPerPort": int64(1), "bufferBytes": int64(64 << 20), "reorderBlocks": int64(4)}, "spec", "receiver", "udp")
	set(map[string]any{"after": "Bytes", "bytes": int64(speadBytes)}, "spec", "receiver", "stop")
	set([]any{map[string]any{"name": "verify", "args": []any{"ring", "read", "-k", speadKey, "--wait", "60s", "--verify", "7", "-s"}}}, "spec", "readers")
	return u
}

// stepSPEADCapture is issue 53's packet capture end to end: a SPEAD
// RingCapture in Pod network mode listens, `ringcap send --protocol spead`
// in a pod streams the test pattern to its UDP endpoint, and the capture
// succeeds with every packet received, none lost, and the reader's verify of
// every byte clean.
func stepSPEADCapture(t *testing.T) {
	u := speadCaptureObject(t)
	if _, err := s.dyn.Resource(gvrRingCapture).Namespace(testNamespace).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create RingCapture %s: %v", speadCapture, err)
	}
	t.Cleanup(func() { deleteCaptureAndWait(t, speadCapture) })
	u = waitCapture(t, speadCapture, 3*time.Minute, "Listening with a UDP endpoint", func(u *unstructured.Unstructured) bool {
		ports, _, _ := unstructured.NestedSlice(u.Object, "status", "endpoint", "udpPorts")
		return str(u, "status", "phase") == "Listening" && str(u, "status", "endpoint", "address") != "" && len(ports) > 0
	})
	ports, _, _ := unstructured.NestedSlice(u.Object, "status", "endpoint", "udpPorts")
	port, _ := ports[0].(int64)
	addr := str(u, "status", "endpoint", "address") + ":" + strconv.FormatInt(port, 10)
	sender := shellPod("spead-sender", "exec ringcap send --connect "+addr+" "+speadRule+" --seed 7 --bytes "+strconv.Itoa(speadBytes)+
		" --packet-bytes "+strconv.Itoa(speadPacket)+" --rate 8M")
	restricted(&sender.Spec.Containers[0])
	if _, err := s.cs.CoreV1().Pods(testNamespace).Create(context.Background(), sender, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	podName := str(u, "status", "pod")
	t.Cleanup(func() { deletePodAndWait(t, testNamespace, sender.Name) })
	t.Cleanup(func() { logsOnFailure(t, sender.Name, "main", podName, "receiver", podName, "verify") })
	end := waitCapture(t, speadCapture, 3*time.Minute, "Succeeded", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Succeeded"
	})
	end = finalPacketCounts(end)
	slog := podLogs(t, testNamespace, sender.Name, "main")
	checkVerifiedRun(t, end, slog)
	checkNoPacketLoss(t, end, slog)
}

// finalPacketCounts gives the operator up to 30 s to copy the receiver's
// final counts (its summary) into status.packets after Succeeded: it returns
// the capture once they account for every byte, or as it is then.
func finalPacketCounts(end *unstructured.Unstructured) *unstructured.Unstructured {
	_, _, _ = poll(30*time.Second, func(ctx context.Context) (bool, string, error) {
		u, err := getCapture(ctx, speadCapture)
		if err != nil {
			return retry(err)
		}
		end = u
		return num(u, "status", "packets", "receivedBytes")+num(u, "status", "packets", "zeroFilledBytes") >= speadBytes, captureSummary(u), nil
	})
	return end
}

// checkNoPacketLoss checks status.packets against the sender's summary:
// every packet sent received, none lost, late, duplicated or zero-filled.
func checkNoPacketLoss(t *testing.T, end *unstructured.Unstructured, senderLog string) {
	t.Helper()
	m := regexp.MustCompile(`send: bytes=(\d+) packets=(\d+) payload_bytes=(\d+) dropped_packets=0 `).FindStringSubmatch(senderLog)
	if m == nil {
		t.Fatalf("sender printed no packet summary:\n%s", senderLog)
	}
	sent, _ := strconv.ParseInt(m[2], 10, 64)
	if want := int64(speadBytes / speadPacket); sent != want {
		t.Errorf("sender sent %d packets, want %d", sent, want)
	}
	pk := func(f string) int64 { return num(end, "status", "packets", f) }
	if got := pk("receivedPackets"); got != sent || pk("receivedBytes") != speadBytes {
		t.Errorf("status.packets receivedPackets=%d receivedBytes=%d, want %d and %d", got, pk("receivedBytes"), sent, speadBytes)
	}
	for _, f := range []string{"late", "outOfWindow", "duplicate", "malformed", "invalid", "outOfRange", "kernelDrops", "zeroFilledBytes"} {
		if pk(f) != 0 {
			t.Errorf("status.packets.%s = %d, want 0 (packets %v)", f, pk(f), end.Object["status"].(map[string]any)["packets"])
		}
	}
	t.Logf("%d SPEAD packets, %d bytes over UDP, verified by the reader", sent, speadBytes)
}
