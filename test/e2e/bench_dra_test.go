//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ringcap/ringcap/internal/benchstat"
)

// Settings of `make bench-dra` (environment): rounds of the pod-start pair, the number of the
// first round, port down/up runs. A round takes about 90 s on the TCG node (each pod 20-30 s
// to start and 15-20 s to go), so the defaults keep the target within 15 minutes. To reach
// more rounds, run the target in parts, each part's BENCH_DRA_FIRST_ROUND following the
// last round of the one before (so the parts alternate as one run would), and combine their
// logs with `make bench-dra-combine` (hack/benchdra).
var (
	benchRounds     = envInt("BENCH_DRA_ROUNDS", 6)
	benchFirstRound = envInt("BENCH_DRA_FIRST_ROUND", 1)
	benchPortRuns   = envInt("BENCH_DRA_PORT_RUNS", 10)
)

// TestBenchDRA is `make bench-dra` (RINGCAP_BENCH_DRA=1; `make e2e` leaves it out), on the
// e2e cluster with the chart in plugin.mode both:
//   - claim → pod Running: a ResourceClaim selecting rxe1 and a pod using it, from the claim's
//     creation to the pod's Running phase (as an informer on the host delivers it), beside a pod requesting one
//     ringcap.io/rdma from the device plugin; both through the scheduler, in alternating order,
//     each deleted (and the claim gone) before the next: ratio dra/deviceplugin, the median of
//     the per-round ratios with its distribution-free 95 % interval;
//   - port down → device gone: portwatch in the guest takes veth1 and veth0 down together (one
//     `ip -batch`) and up again, and times the DRA driver's ResourceSlice (rxe1, seen through
//     the API server) and the device plugin's ListAndWatch stream (rxe0: each device belongs
//     to one side in plugin.mode both), both from just before the link command on the guest's
//     clock.
func TestBenchDRA(t *testing.T) {
	if os.Getenv("RINGCAP_BENCH_DRA") == "" {
		t.Skip("a benchmark: `make bench-dra` runs it (RINGCAP_BENCH_DRA=1)")
	}
	installBoth(t)
	waitForSliceNetdev(t, draClaimNetdev)
	waitAllocatable(t)
	ensureNamespace(t, testNamespace)
	benchPodStart(t)
	benchPortDown(t)
}

// waitAllocatable waits until the node offers the device plugin's resource.
func waitAllocatable(t *testing.T) {
	t.Helper()
	waitFor(t, 3*time.Minute, "node allocatable "+string(rdmaResource), func(ctx context.Context) (bool, string, error) {
		n, err := s.cs.CoreV1().Nodes().Get(ctx, s.node, metav1.GetOptions{})
		if err != nil {
			return retry(err)
		}
		a := n.Status.Allocatable[rdmaResource]
		return a.Value() >= 1, a.String(), nil
	})
}

func benchPodStart(t *testing.T) {
	pods := startPodPhases(t)
	dra, dp, ratios := alternateRounds(t, benchFirstRound-1, benchRounds, "dra", "deviceplugin",
		func(i int) time.Duration { return podStartDRA(t, pods, i) },
		func(i int) time.Duration { return podStartDevicePlugin(t, pods, i) })
	r, lo, hi := benchstat.MedianCI(ratios)
	dm, _, _ := benchstat.MedianCI(dra)
	pm, _, _ := benchstat.MedianCI(dp)
	report(t, "bench-dra: ratio dra/deviceplugin=%.3f [%.3f, %.3f] (claim -> pod Running: dra median %.2f s, deviceplugin median %.2f s, %d rounds, goal <= 1.2)",
		r, lo, hi, dm, pm, len(ratios))
}

// podStartDRA times a ResourceClaim selecting rxe1 and a pod using it, from the claim's
// creation to the pod running; it deletes both (and waits until the claim is gone).
func podStartDRA(t *testing.T, pods *podPhases, i int) time.Duration {
	t.Helper()
	name := fmt.Sprintf("bench-dra-%d", i)
	claim := netdevClaim(name, draClaimNetdev)
	pod := claimPod(name, name, "exec sleep 600")
	d := timePodRunning(t, pods, pod, func(ctx context.Context) error {
		_, err := s.cs.ResourceV1().ResourceClaims(testNamespace).Create(ctx, claim, metav1.CreateOptions{})
		return err
	})
	deletePodAndWait(t, testNamespace, pod.Name)
	deleteClaim(t, name)
	waitFor(t, 2*time.Minute, "ResourceClaim "+name+" gone", func(ctx context.Context) (bool, string, error) {
		_, err := s.cs.ResourceV1().ResourceClaims(testNamespace).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err), nil
	})
	return d
}

// podStartDevicePlugin times the same pod with one ringcap.io/rdma instead of a claim.
func podStartDevicePlugin(t *testing.T, pods *podPhases, i int) time.Duration {
	t.Helper()
	pod := shellPod(fmt.Sprintf("bench-dp-%d", i), "exec sleep 600")
	pod.Spec.NodeName = ""
	pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": s.node}
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{rdmaResource: resource.MustParse("1")}
	restricted(&pod.Spec.Containers[0])
	d := timePodRunning(t, pods, pod, nil)
	deletePodAndWait(t, testNamespace, pod.Name)
	return d
}

// timePodRunning runs before (when set) and creates pod, and returns the time from before's
// start until pods reports the pod Running.
func timePodRunning(t *testing.T, pods *podPhases, pod *corev1.Pod, before func(context.Context) error) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	seen := pods.expect(pod.Name)
	start := time.Now()
	if before != nil {
		if err := before(ctx); err != nil {
			t.Fatalf("before pod %s: %v", pod.Name, err)
		}
	}
	if _, err := s.cs.CoreV1().Pods(testNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", pod.Name, err)
	}
	t.Cleanup(func() { deletePodAndWait(t, testNamespace, pod.Name) })
	select {
	case got := <-seen:
		if got.pod.Status.Phase != corev1.PodRunning {
			t.Fatalf("pod %s ended: %s", pod.Name, podSummary(got.pod))
		}
		return got.at.Sub(start)
	case <-ctx.Done():
		p, err := s.cs.CoreV1().Pods(testNamespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pod %s not seen running within 3m: %v", pod.Name, err)
		}
		t.Fatalf("pod %s not seen running within 3m: %s", pod.Name, podSummary(p))
	}
	return 0
}

// benchPortDown runs portwatch in the guest (built here for it, static) and reports the
// port-down latencies of the driver's slice and the plugin's ListAndWatch.
func benchPortDown(t *testing.T) {
	share := os.Getenv("RINGCAP_E2E_GUEST_SHARE")
	if share == "" {
		t.Fatal("RINGCAP_E2E_GUEST_SHARE is not set: the port-down half needs the VM harness (make bench-dra)")
	}
	build := exec.Command("go", "build", "-ldflags", "-s -w", "-o", filepath.Join(share, "bin", "portwatch"), "./portwatch")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build portwatch: %v\n%s", err, out)
	}
	t.Cleanup(func() { restoreLinks(t) })
	up := "ip link set " + senderNetdev + " up; " + strings.Join(strings.Split(linkRestoreScript, "\n")[1:4], "; ")
	down := fmt.Sprintf(`printf 'link set %s down\nlink set %s down\n' | ip -batch -`, draClaimNetdev, senderNetdev)
	script := fmt.Sprintf("exec /mnt/host/bin/portwatch -kubeconfig /mnt/host/cluster/admin.kubeconfig -node %s -netdev %s -device-id %s -runs %d -down %q -up %q",
		s.node, draClaimNetdev, senderDevice, benchPortRuns, down, up)
	out, rc, err := guestRun("portwatch", script, 12*time.Minute)
	t.Logf("portwatch:\n%s", out)
	if err != nil || rc != 0 {
		t.Fatalf("portwatch in the guest: rc %d %v", rc, err)
	}
	var slice, law []float64
	re := regexp.MustCompile(`portwatch run=\d+ down slice_ms=([0-9.]+) listandwatch_ms=([0-9.]+)`)
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		a, _ := strconv.ParseFloat(m[1], 64)
		b, _ := strconv.ParseFloat(m[2], 64)
		slice, law = append(slice, a), append(law, b)
	}
	if len(slice) != benchPortRuns {
		t.Fatalf("portwatch reported %d runs, want %d", len(slice), benchPortRuns)
	}
	sm, slo, shi := benchstat.MedianCI(slice)
	lm, llo, lhi := benchstat.MedianCI(law)
	report(t, "bench-dra: port down -> device leaves the slice %.0f ms [%.0f, %.0f], ListAndWatch unhealthy %.0f ms [%.0f, %.0f] (%d runs, rescan interval 1 s)",
		sm, slo, shi, lm, llo, lhi, len(slice))
	report(t, "bench-dra: ratio slice/listandwatch=%.2f [%.2f, %.2f] (ratio of the medians; interval from the two medians' intervals)",
		sm/lm, slo/lhi, shi/llo)
}

// restoreLinks brings veth0 up and restores veth1 with the policy routes (restoreLink).
func restoreLinks(t *testing.T) {
	t.Helper()
	if out, rc, err := guestRun("link-up-"+senderNetdev, "ip link set "+senderNetdev+" up", time.Minute); err != nil || rc != 0 {
		t.Errorf("bring %s up in the guest: rc %d %v: %s", senderNetdev, rc, err, out)
	}
	restoreLink(t)
}

// alternateRounds runs n rounds of a and b, numbered from first (0-based; the log counts
// from 1), a first in even rounds, b first in odd ones, so that no place favours one, and
// returns their times in seconds and the per-round ratios a/b. Its "round" lines are what
// hack/benchdra reads back.
func alternateRounds(t *testing.T, first, n int, aName, bName string, a, b func(i int) time.Duration) (as, bs, ratios []float64) {
	t.Helper()
	for i := first; i < first+n; i++ {
		var da, db time.Duration
		if i%2 == 0 {
			da, db = a(i), b(i)
		} else {
			db, da = b(i), a(i)
		}
		t.Logf("round %d: %s %v %s %v", i+1, aName, da.Round(time.Millisecond), bName, db.Round(time.Millisecond))
		as, bs = append(as, da.Seconds()), append(bs, db.Seconds())
		ratios = append(ratios, da.Seconds()/db.Seconds())
	}
	return as, bs, ratios
}

// report prints a figure line on stdout (for the make target's output) and in the test log.
func report(t *testing.T, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf(format, args...)
	fmt.Println(line)
	t.Log(line)
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
		return v
	}
	return def
}
