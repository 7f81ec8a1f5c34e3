//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A real Prometheus (Debian's, unpacked by hack/install-tools.sh) runs inside the node VM,
// beside the kubelet, scraping the capture pod and the device plugin every second with the
// chart's own alert rules (charts/ringcap/files/alerts.yaml): the e2e steps ask it, as an
// operator's Prometheus would be asked, whether the alerts fire and the dashboard's panels
// have data.

// promListen is where the guest's Prometheus listens: the VM's loopback only.
const promListen = "127.0.0.1:19090"

// promTarget is a /metrics endpoint and the labels Prometheus's Kubernetes discovery would
// give it (namespace, pod), which the rules and panels group by. honorLabels keeps the
// endpoint's own namespace and pod labels where they clash with the target's, as the
// chart's PodMonitors for the device plugin and the DRA driver do: their per-capture link
// counters name the capture's pod.
type promTarget struct {
	addr        string
	labels      map[string]string
	honorLabels bool
}

// prom is a Prometheus running in the guest.
type prom struct{ dir string }

// startPrometheus starts Prometheus in the guest with the chart's rules, scraping targets
// every second, and stops it (by PID) when the test ends.
func startPrometheus(t *testing.T, targets []promTarget) *prom {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("no prometheus binary on PATH (hack/install-tools.sh unpacks Debian's into $RINGCAP_TOOLS): %v", err)
	}
	share := os.Getenv("RINGCAP_E2E_GUEST_SHARE")
	if share == "" {
		t.Fatal("RINGCAP_E2E_GUEST_SHARE is not set: Prometheus runs in the VM harness (make e2e)")
	}
	// A directory of its own each time: the guest's view of the share caches what an
	// earlier step's Prometheus read under the same name (step 24's loaded step 7's
	// configuration).
	dir, err := os.MkdirTemp(share, "prometheus-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, bin, filepath.Join(dir, "prometheus"), 0o755)
	copyFile(t, "../../charts/ringcap/files/alerts.yaml", filepath.Join(dir, "alerts.yaml"), 0o644)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), promConfig(targets), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &prom{dir: "/mnt/host/" + filepath.Base(dir)}
	// Its data on the guest's tmpfs, its own PID in a file for the cleanup (written by the
	// shell it execs from: setsid may fork, so $! can be setsid's); setsid and the
	// redirections let the guest shell's script end while it runs. A Prometheus already
	// answering on the address (one a step left) is an error, not a server to query.
	script := fmt.Sprintf(`if curl -sf http://%[2]s/-/ready >/dev/null; then echo "a Prometheus already answers on %[2]s"; exit 1; fi
rm -rf /tmp/prom-data; mkdir -p /tmp/prom-data
setsid sh -c 'echo $$ > /tmp/prometheus.pid; exec %[1]s/prometheus --config.file=%[1]s/prometheus.yml --storage.tsdb.path=/tmp/prom-data --web.listen-address=%[2]s' >/tmp/prometheus.log 2>&1 < /dev/null &
for i in $(seq 120); do [ -s /tmp/prometheus.pid ] && kill -0 "$(cat /tmp/prometheus.pid)" && curl -sf http://%[2]s/-/ready >/dev/null && exit 0; sleep 1; done
echo "prometheus not ready after 120 s:"; tail -20 /tmp/prometheus.log; exit 1`, p.dir, promListen)
	t.Cleanup(func() { stopPrometheus(t, dir) })
	if out, rc, err := guestRun("prom-start", script, 3*time.Minute); err != nil || rc != 0 {
		t.Fatalf("start prometheus in the guest: rc %d, %v:\n%s", rc, err, out)
	}
	return p
}

// stopPrometheus stops the guest's Prometheus by its PID and checks that nothing answers
// on its address after.
func stopPrometheus(t *testing.T, dir string) {
	t.Helper()
	script := fmt.Sprintf(`pid=$(cat /tmp/prometheus.pid 2>/dev/null) && kill "$pid" 2>/dev/null
for i in $(seq 20); do curl -sf http://%[1]s/-/ready >/dev/null || break; sleep 0.5; done
[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
rm -rf /tmp/prom-data /tmp/prometheus.pid
sleep 0.5; if curl -sf http://%[1]s/-/ready >/dev/null; then echo "a Prometheus still answers on %[1]s"; exit 1; fi`, promListen)
	out, rc, err := guestRun("prom-stop", script, time.Minute)
	if err != nil || rc != 0 {
		t.Errorf("stop the guest's prometheus: rc %d, %v: %s", rc, err, out)
	}
	_ = os.RemoveAll(dir)
}

// promConfig is a configuration scraping targets every second and evaluating the rules
// as often: job ringcap for the targets whose labels win, ringcap-node for those that
// honor their own (honorLabels).
func promConfig(targets []promTarget) []byte {
	var b strings.Builder
	b.WriteString("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: [alerts.yaml]\nscrape_configs:\n")
	for _, job := range []struct {
		name  string
		honor bool
	}{{"ringcap", false}, {"ringcap-node", true}} {
		fmt.Fprintf(&b, "  - job_name: %s\n    honor_labels: %v\n    static_configs:\n", job.name, job.honor)
		n := 0
		for _, tg := range targets {
			if tg.honorLabels != job.honor {
				continue
			}
			n++
			fmt.Fprintf(&b, "      - targets: [%q]\n        labels:\n", tg.addr)
			for k, v := range tg.labels {
				fmt.Fprintf(&b, "          %s: %q\n", k, v)
			}
		}
		if n == 0 {
			b.WriteString("      []\n")
		}
	}
	return []byte(b.String())
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
}

// promSample is one series of an instant query's answer.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// get asks the guest's Prometheus API path with the query parameters and decodes data.
func (p *prom) get(path string, params url.Values, data any) error {
	u := "http://" + promListen + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	out, rc, err := guestRun("prom-get", "curl -sS --max-time 20 '"+u+"'", time.Minute)
	if err != nil {
		return fmt.Errorf("GET %s in the guest: %w", path, err)
	}
	if rc != 0 {
		return fmt.Errorf("GET %s in the guest: curl exited %d: %s", path, rc, out)
	}
	var resp struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		return fmt.Errorf("GET %s: %w: %s", path, err, out)
	}
	if resp.Status != "success" {
		return fmt.Errorf("GET %s: %s", path, resp.Error)
	}
	return json.Unmarshal(resp.Data, data)
}

// query is the instant query expr's series.
func (p *prom) query(expr string) ([]promSample, error) {
	var d struct {
		Result []promSample `json:"result"`
	}
	err := p.get("/api/v1/query", url.Values{"query": {expr}}, &d)
	return d.Result, err
}

// waitScraped waits until every target has been scraped and answered.
func (p *prom) waitScraped(t *testing.T, limit time.Duration) {
	t.Helper()
	waitFor(t, limit, "Prometheus scraping every target", func(context.Context) (bool, string, error) {
		tg, err := p.targets()
		if err != nil {
			return retry(err)
		}
		return tg != "" && !strings.Contains(tg, " down (") && !strings.Contains(tg, " unknown ("), tg, nil
	})
}

// targets says each scrape target's health, as "address health (last error)".
func (p *prom) targets() (string, error) {
	var d struct {
		ActiveTargets []struct {
			ScrapeURL string `json:"scrapeUrl"`
			Health    string `json:"health"`
			LastError string `json:"lastError"`
		} `json:"activeTargets"`
	}
	if err := p.get("/api/v1/targets", nil, &d); err != nil {
		return "", err
	}
	var out []string
	for _, tg := range d.ActiveTargets {
		out = append(out, fmt.Sprintf("%s %s (%s)", tg.ScrapeURL, tg.Health, tg.LastError))
	}
	return strings.Join(out, "; "), nil
}

// firing lists the alerts in state firing, as name{labels}.
func (p *prom) firing() (map[string]bool, error) {
	var d struct {
		Alerts []struct {
			Labels map[string]string `json:"labels"`
			State  string            `json:"state"`
		} `json:"alerts"`
	}
	if err := p.get("/api/v1/alerts", nil, &d); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, a := range d.Alerts {
		if a.State == "firing" {
			out[a.Labels["alertname"]] = true
		}
	}
	return out, nil
}

// waitAlerts waits until want says the firing alerts are as expected.
func (p *prom) waitAlerts(t *testing.T, limit time.Duration, what string, want func(map[string]bool) bool) {
	t.Helper()
	waitFor(t, limit, what, func(context.Context) (bool, string, error) {
		f, err := p.firing()
		if err != nil {
			return retry(err)
		}
		return want(f), fmt.Sprintf("firing: %v", f), nil
	})
}

// captureTargets are the capture pod's /metrics (namespace and pod labels as discovery
// would set them) and the device plugin's on the capture's node.
func captureTargets(t *testing.T, capturePod string) []promTarget {
	t.Helper()
	ctx := context.Background()
	pod, err := s.cs.CoreV1().Pods(testNamespace).Get(ctx, capturePod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	port := pod.Annotations["prometheus.io/port"]
	if pod.Status.PodIP == "" || port == "" {
		t.Fatalf("capture pod %s: IP %q, prometheus.io/port %q", pod.Name, pod.Status.PodIP, port)
	}
	tg := []promTarget{{addr: pod.Status.PodIP + ":" + port, labels: map[string]string{"namespace": pod.Namespace, "pod": pod.Name}}}
	l, err := s.cs.CoreV1().Pods(s.namespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/component=plugin", FieldSelector: "spec.nodeName=" + pod.Spec.NodeName})
	if err != nil || len(l.Items) != 1 {
		t.Fatalf("device plugin pod on %s: %v (%d pods)", pod.Spec.NodeName, err, len(l.Items))
	}
	pl := l.Items[0]
	tg = append(tg, promTarget{addr: fmt.Sprintf("%s:%d", pl.Status.PodIP, draMetricsPort),
		labels: map[string]string{"namespace": pl.Namespace, "pod": pl.Name}, honorLabels: true})
	return tg
}

// dashboardPanel is a panel of the chart's dashboard: a row, or a panel with its queries.
type dashboardPanel struct {
	Type    string `json:"type"`
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// dashboardPanels are the chart's dashboard's panels, rows among them, in order.
func dashboardPanels(t *testing.T) []dashboardPanel {
	t.Helper()
	b, err := os.ReadFile("../../charts/ringcap/files/dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []dashboardPanel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	return d.Panels
}

// dashboardQueries are the expressions of the chart's dashboard panels, by panel title,
// with its variables set to one namespace and pod (any instance).
func dashboardQueries(t *testing.T, namespace, pod string) map[string][]string {
	t.Helper()
	r := strings.NewReplacer("$namespace", namespace, "$pod", pod, "$instance", ".+")
	out := map[string][]string{}
	for _, p := range dashboardPanels(t) {
		for _, tg := range p.Targets {
			if tg.Expr != "" {
				out[p.Title] = append(out[p.Title], r.Replace(tg.Expr))
			}
		}
	}
	return out
}

// rowPanels are the titles of the dashboard's panels in the row titled row (the panels
// that follow it up to the next row).
func rowPanels(t *testing.T, row string) []string {
	t.Helper()
	var titles []string
	in := false
	for _, p := range dashboardPanels(t) {
		if p.Type == "row" {
			in = p.Title == row
		} else if in {
			titles = append(titles, p.Title)
		}
	}
	if len(titles) == 0 {
		t.Fatalf("dashboard.json has no panels in a row %q", row)
	}
	return titles
}

// panelsWithoutData lists the panels whose queries all answer no series, but for those
// that may rightly be empty on a healthy run (counts of errors that did not happen).
func panelsWithoutData(p *prom, queries map[string][]string, mayBeEmpty map[string]bool) ([]string, error) {
	var empty []string
	for title, exprs := range queries {
		if mayBeEmpty[title] {
			continue
		}
		n := 0
		for _, e := range exprs {
			res, err := p.query(e)
			if err != nil {
				return nil, fmt.Errorf("panel %q: %w", title, err)
			}
			n += len(res)
		}
		if n == 0 {
			empty = append(empty, title)
		}
	}
	return empty, nil
}

// checkPrometheusSeesTheStall runs while a capture's only reader is stopped and the ring is
// full (step 7): the chart's alerts for it fire in a real Prometheus and every dashboard
// panel has data; once the reader is continued, the alerts resolve.
func checkPrometheusSeesTheStall(t *testing.T, p *prom, capturePod, readerContainer string) {
	t.Helper()
	p.waitAlerts(t, 4*time.Minute, "RingcapReceiverHeldBack and RingcapReaderStalled firing", func(f map[string]bool) bool {
		return f["RingcapReceiverHeldBack"] && f["RingcapReaderStalled"]
	})
	mayBeEmpty := map[string]bool{"Completion errors": true, "Incomplete observations": true}
	// The stalled capture is an RDMA one: the packet row's panels query only a SPEAD or VDIF
	// receiver's series (hack/dashboard's TestPacketRowHoldsThePacketPanels), none here.
	for _, title := range rowPanels(t, "Packet captures") {
		mayBeEmpty[title] = true
	}
	waitFor(t, 2*time.Minute, "every dashboard panel with data", func(context.Context) (bool, string, error) {
		empty, err := panelsWithoutData(p, dashboardQueries(t, testNamespace, capturePod), mayBeEmpty)
		if err != nil {
			return retry(err)
		}
		return len(empty) == 0, fmt.Sprintf("panels without data: %v", empty), nil
	})
	checkCaptureLinkCounters(t, p, capturePod)
	// Continue the reader: the ring drains and the alerts resolve.
	if out, err := execIn(t, testNamespace, capturePod, readerContainer, "/bin/sh", "-c", "kill -CONT -1"); err != nil {
		t.Fatalf("continue the stopped reader: %v: %s", err, out)
	}
	p.waitAlerts(t, 4*time.Minute, "the stall's alerts resolved", func(f map[string]bool) bool {
		return !f["RingcapReceiverHeldBack"] && !f["RingcapReaderStalled"]
	})
}

// checkCaptureLinkCounters: the capture runs in Pod mode, whose network namespace shows
// its RDMA device without counters; the device plugin, in the node's, exports the
// counters of the port the pod holds (the kubelet's PodResources API says which) as
// ringcap_capture_link_increase_total, counted from when it first saw the pod holding the
// device. The stream into the ring made the port's rcvd_pkts (an rxe hw_counter) grow
// since, and the series carry the pod's ringcap.io/capture label.
func checkCaptureLinkCounters(t *testing.T, p *prom, capturePod string) {
	t.Helper()
	pod, err := s.cs.CoreV1().Pods(testNamespace).Get(context.Background(), capturePod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	capture := pod.Labels["ringcap.io/capture"]
	expr := fmt.Sprintf(`ringcap_capture_link_increase_total{namespace=%q, pod=%q, capture=%q, source="hw_counters", counter="rcvd_pkts"} > 0`,
		testNamespace, capturePod, capture)
	waitFor(t, 2*time.Minute, expr, func(context.Context) (bool, string, error) {
		res, err := p.query(expr)
		if err != nil {
			return retry(err)
		}
		if len(res) > 0 {
			t.Logf("the capture's link counters: %v", res)
			return true, "", nil
		}
		all, err := p.query(fmt.Sprintf(`ringcap_capture_link_increase_total{namespace=%q} or ringcap_plugin_pod_resources_up`, testNamespace))
		return false, fmt.Sprintf("no series; the namespace's per-capture series and the plugin's PodResources API: %v (%v)", all, err), nil
	})
}

// topThroughTerminal runs `kubectl ringcap top` as a user would, in a terminal (a pty from
// script(1)), for a few seconds: it redraws the screen and shows the capture with its
// fill, from the cluster the suite uses.
func topThroughTerminal(t *testing.T, capture string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kubectl-ringcap")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/kubectl-ringcap").CombinedOutput(); err != nil {
		t.Fatalf("build kubectl-ringcap: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "script", "-qfec", bin+" top -n "+testNamespace+" --interval 1s", "/dev/null")
	out, _ := cmd.CombinedOutput() // ended by the timeout, as an interrupt ends top
	text := string(out)
	if n := strings.Count(text, "\x1b[H"); n < 2 || !strings.Contains(text, "FILL") || !strings.Contains(text, capture) {
		t.Errorf("kubectl ringcap top in a terminal: %d redraws, want ≥ 2 with the FILL column and capture %s:\n%q", n, capture, text)
	}
}
