//go:build envtest

package controller_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/internal/controller"
)

const scaleCaptures = 200

// parallel runs f(i) for i in [0, n) on 8 workers and returns the first error.
func parallel(n int, f func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	next := make(chan int)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

func createCaptures(ns string, n int) error {
	return parallel(n, func(i int) error {
		rc := &ringcapv1.RingCapture{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("c%03d", i)}}
		rc.Spec.Ring.HostIPC = true // no reader containers: the reader slot is left to a reader on the node
		if err := env.Client.Create(context.Background(), rc); err != nil {
			return fmt.Errorf("create RingCapture %d: %w", i, err)
		}
		return nil
	})
}

// waitAll waits until every RingCapture in ns satisfies ok; it returns how many do.
func waitAll(ns string, n int, what string, ok func(rc *ringcapv1.RingCapture) bool) error {
	return waitFor(5*time.Minute, func() (bool, string) {
		var list ringcapv1.RingCaptureList
		if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		good := 0
		for i := range list.Items {
			if ok(&list.Items[i]) {
				good++
			}
		}
		return good == n && len(list.Items) == n, fmt.Sprintf("%d of %d RingCaptures %s", good, n, what)
	})
}

func pendingWithPod(rc *ringcapv1.RingCapture) bool {
	return rc.Status.Phase == ringcapv1.PhasePending && rc.Status.Pod == controller.PodName(rc.Name) &&
		rc.Status.ObservedGeneration == rc.Generation &&
		conditionIs(rc, ringcapv1.ConditionScheduled, metav1.ConditionFalse, ringcapv1.ReasonPodPending)
}

func receiving(rc *ringcapv1.RingCapture) bool {
	return rc.Status.Phase == ringcapv1.PhaseReceiving && rc.Status.BytesReceived == 1<<20 &&
		conditionIs(rc, ringcapv1.ConditionReady, metav1.ConditionTrue, ringcapv1.ReasonReceiverReady)
}

// startAll plays scheduler and kubelet for every capture pod in ns and makes each
// fake receiver report data.
func startAll(ns string, n int) error {
	return parallel(n, func(i int) error {
		ctx := context.Background()
		name := controller.PodName(fmt.Sprintf("c%03d", i))
		receivers.Set(ns, name, receiverStatus("Receiving", 1<<20))
		pod := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
			return err
		}
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}
		if err := env.Client.SubResource("binding").Create(ctx, pod, b); err != nil {
			return fmt.Errorf("bind %s: %w", name, err)
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		now := metav1.Now()
		pod.Status.Phase, pod.Status.PodIP, pod.Status.StartTime = corev1.PodRunning, fmt.Sprintf("10.89.%d.%d", i/250, i%250+1), &now
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "receiver", Image: pod.Spec.Containers[0].Image, ImageID: "sha256:0",
			Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}
		if err := env.Client.Status().Update(ctx, pod); err != nil {
			return fmt.Errorf("run %s: %w", name, err)
		}
		return nil
	})
}

// 200 RingCaptures created at once all get exactly one pod and reach a steady status;
// then all their pods start and all reach Receiving. The operator polls receivers at
// the shipped interval, so the load is what 200 captures put on a real cluster.
func TestScale200(t *testing.T) {
	startOperatorPolling(t, 0)
	ns := newNamespace(t, "scale")
	if err := createCaptures(ns, scaleCaptures); err != nil {
		t.Fatal(err)
	}
	if err := waitAll(ns, scaleCaptures, "Pending with their pod", pendingWithPod); err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	if err := env.Client.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != scaleCaptures {
		t.Fatalf("%d pods for %d RingCaptures", len(pods.Items), scaleCaptures)
	}
	if err := startAll(ns, scaleCaptures); err != nil {
		t.Fatal(err)
	}
	if err := waitAll(ns, scaleCaptures, "Receiving", receiving); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkOperator measures how long 200 RingCaptures created at once take to reach
// a steady status (each with its pod), and then to reach Receiving once their pods
// run; with reconciles per second. The anchor, measured in the same run, is the time
// the same API server takes to create 200 plain pods from 8 client workers: the
// least work the operator must do.
func BenchmarkOperator(b *testing.B) {
	for iter := 0; iter < b.N; iter++ {
		ns := newNamespace(b, fmt.Sprintf("bench-anchor-%d", iter))
		start := time.Now()
		err := parallel(scaleCaptures, func(i int) error {
			rc := &ringcapv1.RingCapture{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("a%03d", i), Generation: 1}}
			rc.Spec.Ring = ringcapv1.RingSpec{Key: "dada", BlockBytes: 524288, Blocks: 4, Readers: 1, HeaderBlockBytes: 4096}
			rc.Spec.Receiver = ringcapv1.ReceiverSpec{QueuePairs: 4, Mode: "Send", MemoryRegistration: "Auto", Port: 18515,
				MetricsPort: 9100, MessageBytes: 65536, ReceiveDepth: 128, ResourceName: ringcapv1.DefaultResourceName}
			return env.Client.Create(context.Background(), controller.BuildPod(rc, controller.DefaultPodOptions()))
		})
		anchor := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}

		op := startOperatorPolling(b, 0)
		ns = newNamespace(b, fmt.Sprintf("bench-%d", iter))
		r0 := controller.ReconcilesTotal()
		start = time.Now()
		if err := createCaptures(ns, scaleCaptures); err != nil {
			b.Fatal(err)
		}
		if err := waitAll(ns, scaleCaptures, "Pending with their pod", pendingWithPod); err != nil {
			b.Fatal(err)
		}
		steady := time.Since(start)
		r1 := controller.ReconcilesTotal()

		start = time.Now()
		if err := startAll(ns, scaleCaptures); err != nil {
			b.Fatal(err)
		}
		if err := waitAll(ns, scaleCaptures, "Receiving", receiving); err != nil {
			b.Fatal(err)
		}
		running := time.Since(start)
		r2 := controller.ReconcilesTotal()
		op.Stop(b)

		b.ReportMetric(anchor.Seconds(), "anchor-200-pods-s")
		b.ReportMetric(steady.Seconds(), "steady-200-s")
		b.ReportMetric(steady.Seconds()/anchor.Seconds(), "steady/anchor")
		b.ReportMetric((r1-r0)/steady.Seconds(), "reconciles/s-create")
		b.ReportMetric(running.Seconds(), "receiving-200-s")
		b.ReportMetric((r2-r1)/running.Seconds(), "reconciles/s-running")
		b.Logf("operator API client at its default budget of 50 requests/s (burst 100), receivers polled at the shipped interval; "+
			"200 RingCaptures: steady (pods created, status Pending) in %.2f s = %.2f x the anchor (200 plain pod creates, %.2f s), %.0f reconciles (%.1f/s); "+
			"all Receiving %.2f s after their pods started, %.0f reconciles (%.1f/s)",
			steady.Seconds(), steady.Seconds()/anchor.Seconds(), anchor.Seconds(), r1-r0, (r1-r0)/steady.Seconds(),
			running.Seconds(), r2-r1, (r2-r1)/running.Seconds())
	}
}
