//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// hostCapture creates a Host-mode copy of the sample capture on its own ports.
func hostCapture(t *testing.T, name, key string, port, metricsPort int64) {
	t.Helper()
	newCapture(t, name, key, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "Host", "spec", "network", "mode")
		_ = unstructured.SetNestedField(u.Object, port, "spec", "receiver", "port")
		_ = unstructured.SetNestedField(u.Object, metricsPort, "spec", "receiver", "metricsPort")
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
			"name": "verify", "args": []any{"ring", "read", "-k", key, "--wait", "60s", "--verify", "1", "-s"}}}, "spec", "readers")
	})
}

// waitDataNetworkEndpoint waits until a Host-mode capture listens and checks that its
// endpoint is the address of its RDMA GID on the data network, not the node's IP.
func waitDataNetworkEndpoint(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	u := waitCapture(t, name, 3*time.Minute, "listening on the data network", func(u *unstructured.Unstructured) bool {
		st, _, _ := condition(u, "ExternallyReachable")
		return str(u, "status", "phase") == "Listening" && st == "True"
	})
	addr, gid := str(u, "status", "endpoint", "address"), str(u, "status", "endpoint", "gid")
	_, reason, msg := condition(u, "ExternallyReachable")
	t.Logf("%s: endpoint %s:%s device %s GID %s; %s: %s; reason: %s", name, addr, str(u, "status", "endpoint", "port"),
		str(u, "status", "endpoint", "device"), gid, reason, msg, str(u, "status", "endpoint", "reason"))
	// The status writes an IPv4-mapped GID as its IPv4 address.
	if !strings.HasPrefix(addr, "198.18.0.") || net.ParseIP(gid) == nil || !net.ParseIP(gid).Equal(net.ParseIP(addr)) ||
		str(u, "status", "endpoint", "network") != "Host" || reason != "HostNetwork" {
		t.Errorf("%s: endpoint %s (GID %s, network %s, ExternallyReachable %s), want the IPv4 address of its RoCE v2 GID on the data network",
			name, addr, gid, str(u, "status", "endpoint", "network"), reason)
	}
	if !strings.Contains(str(u, "status", "endpoint", "reason"), str(u, "status", "endpoint", "netdev")) {
		t.Errorf("%s: endpoint.reason %q does not name the netdev %s", name, str(u, "status", "endpoint", "reason"), str(u, "status", "endpoint", "netdev"))
	}
	if a := str(u, "status", "running", "allowedSenders"); a != "listen-subnet" {
		t.Errorf("%s: running.allowedSenders %q, want the Host-mode default listen-subnet", name, a)
	}
	return u
}

// endpointOf is status.endpoint as `ringcap send --connect` takes it.
func endpointOf(u *unstructured.Unstructured) string {
	return net.JoinHostPort(str(u, "status", "endpoint", "address"), str(u, "status", "endpoint", "port"))
}

// receiverMetric reads one metric of a Host-mode receiver from the node (its pod IP).
func receiverMetric(t *testing.T, u *unstructured.Unstructured, metricsPort int, metric string) string {
	t.Helper()
	pod, err := s.cs.CoreV1().Pods(testNamespace).Get(context.Background(), str(u, "status", "pod"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(metricsPort)) + "/metrics")
	if err != nil {
		t.Fatalf("receiver metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + metric + ` (\S+)$`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatalf("no %s in the receiver's /metrics", metric)
	}
	return m[1]
}

// stepHostNetwork is issue 33: senders that are not pods (processes in the VM's own network
// namespace on the other rxe device, as a digitiser host on the data network) stream into
// Host-mode captures at status.endpoint, two of them on one node at once; a third capture on
// the same ports stays Pending with the reason; a sender outside the allowlist is refused
// and the capture keeps serving.
func stepHostNetwork(t *testing.T) {
	hostCapture(t, "host-a", "a1", 20515, 20100)
	if nodeIsContainer() {
		hostModeFailsInContainerNode(t, "host-a")
		return
	}
	a := waitDataNetworkEndpoint(t, "host-a")

	// A pod on the cluster network is outside the Host-mode default allowlist (the subnet of
	// the receiver's address): refused at the handshake, told why, counted.
	refused := senderPod("host-a-refused", a, "--qps 4 --mode send --msg-bytes 65536 --bytes 1M --seed 1")
	phase, log := runPod(t, refused, 3*time.Minute)
	t.Logf("refused sender (%s): %s", phase, strings.TrimSpace(log))
	if phase != corev1.PodFailed || !strings.Contains(log, "receiver refused the connection") || !strings.Contains(log, "is not allowed to send to this receiver") ||
		!strings.Contains(log, "198.18.0.0/24") {
		t.Errorf("sender pod outside the allowlist: phase %s, log %q; want a refusal naming the allowed 198.18.0.0/24", phase, log)
	}
	deletePodAndWait(t, testNamespace, refused.Name) // frees its RDMA unit for host-b
	if n := receiverMetric(t, a, 20100, "ringcap_recv_refused_senders_total"); n != "1" {
		t.Errorf("ringcap_recv_refused_senders_total = %s, want 1", n)
	}
	a = waitCapture(t, "host-a", time.Minute, "still listening after the refusal", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Listening"
	})

	hostCapture(t, "host-b", "b1", 21515, 21100)
	b := waitDataNetworkEndpoint(t, "host-b")
	if endpointOf(a) == endpointOf(b) {
		t.Fatalf("two captures advertise the same endpoint %s", endpointOf(a))
	}

	// A third capture on host-a's ports: the scheduler keeps it off the node, and the status
	// says it is the host ports.
	hostCapture(t, "host-clash", "c1", 20515, 20100)
	waitCapture(t, "host-clash", 2*time.Minute, "Pending for its host ports", func(u *unstructured.Unstructured) bool {
		st, reason, _ := condition(u, "Scheduled")
		return st == "False" && reason == "HostPortInUse"
	})
	deleteCaptureAndWait(t, "host-clash")

	// Both captures stream at once from processes outside the cluster, each to the address in
	// its status; nothing else is needed (the sender finds its own device from its route).
	script := fmt.Sprintf(`set -u
R=/mnt/host/bin/ringcap
send() { $R send --connect "$1" --qps 4 --mode send --msg-bytes 65536 --duration 20s --rate-gbps 0.05 --seed 1 --header SOURCE=outside; }
send %s > /tmp/host-a.log 2>&1 & pa=$!
send %s > /tmp/host-b.log 2>&1 & pb=$!
wait $pa; ra=$?; wait $pb; rb=$?
sed 's/^/host-a: /' /tmp/host-a.log; sed 's/^/host-b: /' /tmp/host-b.log
exit $((ra | rb))
`, endpointOf(a), endpointOf(b))
	type result struct {
		out string
		rc  int
		err error
	}
	res := make(chan result, 1)
	go func() {
		out, rc, err := guestRun("host-senders", script, 5*time.Minute)
		res <- result{out, rc, err}
	}()
	// Not fatal at once: the senders' own account is what tells why.
	both, seen, err := poll(3*time.Minute, func(ctx context.Context) (bool, string, error) {
		ua, err := getCapture(ctx, "host-a")
		if err != nil {
			return retry(err)
		}
		ub, err := getCapture(ctx, "host-b")
		if err != nil {
			return retry(err)
		}
		return str(ua, "status", "phase") == "Receiving" && str(ub, "status", "phase") == "Receiving",
			"host-a " + captureSummary(ua) + "; host-b " + captureSummary(ub), nil
	})
	r := <-res
	t.Logf("senders outside the cluster (exit %d):\n%s", r.rc, r.out)
	if err != nil || !both {
		t.Fatalf("both Host-mode captures receiving at once: not seen within 3m (error %v); last seen: %s", err, seen)
	}
	t.Logf("both Host-mode captures receiving at once: %s", seen)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.rc != 0 {
		t.Fatalf("a sender outside the cluster failed (exit %d)", r.rc)
	}
	for _, name := range []string{"host-a", "host-b"} {
		u := waitCapture(t, name, 3*time.Minute, "Succeeded", func(u *unstructured.Unstructured) bool {
			return str(u, "status", "phase") == "Succeeded"
		})
		if src := str(u, "status", "observation", "source"); src != "outside" {
			t.Errorf("%s: observation source %q, want the sender's SOURCE outside", name, src)
		}
		var own []string
		for _, l := range strings.Split(r.out, "\n") {
			if strings.HasPrefix(l, name+": ") {
				own = append(own, strings.TrimPrefix(l, name+": "))
			}
		}
		checkVerifiedRun(t, u, strings.Join(own, "\n"))
	}
}

// nodeIsContainer reports a node that is a container (kind: RINGCAP_E2E_NODE_CONTAINER=1):
// its network namespace holds none of the host's interfaces, so a Host-mode receiver has no
// address on the data network, and rxe (before Linux gained network namespaces for it)
// serves only netdevs in the host's initial namespace, so the netdev cannot be moved there.
func nodeIsContainer() bool { return os.Getenv("RINGCAP_E2E_NODE_CONTAINER") == "1" }

// hostModeFailsInContainerNode checks what a user of Host mode on such a node is told: the
// capture Failed, its status naming the RDMA netdev that is not in the node's namespace.
func hostModeFailsInContainerNode(t *testing.T, name string) {
	t.Helper()
	u := waitCapture(t, name, 3*time.Minute, "Failed", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Failed"
	})
	st, reason, msg := condition(u, "Failed")
	if st != "True" || reason != "ReceiverFailed" || !netdevElsewhere.MatchString(msg) {
		t.Fatalf("Host mode on a node that is a container: Failed=%s (%s: %s), want ReceiverFailed matching %q", st, reason, msg, netdevElsewhere)
	}
	t.Logf("Host mode on a node that is a container (kind): %s", msg)
	deleteCaptureAndWait(t, name)
}

// netdevElsewhere is the receiver's error for an RDMA netdev outside its network namespace.
var netdevElsewhere = regexp.MustCompile(`netdev \S+, which carries GID \d+ of rxe\d \(address [0-9.]+\), is not in this network namespace`)
