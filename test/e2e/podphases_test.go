//go:build e2e

package e2e

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// podPhases follows the test namespace's pods through an informer and tells waiters when a
// pod is first seen Running (or ended). The informer lists once and then watches from the
// list's resourceVersion; when the API server ends a watch (its timeout, an expired
// resourceVersion, a dropped connection) the reflector watches again from the last version it
// saw, so no change of a pod is missed and none is waited for twice. Every new watch and
// every watch error is logged, which is how an ended watch shows in `make bench-dra`'s output.
type podPhases struct {
	mu      sync.Mutex
	waiting map[string]chan podSeen
	watches atomic.Int32
}

// podSeen is a pod's state when the informer delivered it, and when that was.
type podSeen struct {
	at  time.Time
	pod *corev1.Pod
}

// startPodPhases starts the informer, waits for its first list and stops it at the end of
// the test.
func startPodPhases(t *testing.T) *podPhases {
	t.Helper()
	pp := &podPhases{waiting: map[string]chan podSeen{}}
	inf := cache.NewSharedIndexInformer(pp.listWatch(t), &corev1.Pod{}, 0, cache.Indexers{})
	if err := inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) { t.Logf("pod watch ended with an error: %v", err) }); err != nil {
		t.Fatalf("pod informer: %v", err)
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    pp.seen,
		UpdateFunc: func(_, obj any) { pp.seen(obj) },
	}); err != nil {
		t.Fatalf("pod informer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	first, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	if !cache.WaitForCacheSync(first.Done(), inf.HasSynced) {
		t.Fatalf("pod informer in %s: no first list within 1m", testNamespace)
	}
	return pp
}

// listWatch lists and watches the test namespace's pods, logging each watch after the first
// with the version it resumes from and how long the one before lasted.
func (pp *podPhases) listWatch(t *testing.T) *cache.ListWatch {
	pods := s.cs.CoreV1().Pods(testNamespace)
	var since time.Time
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if n := pp.watches.Add(1); n > 1 {
				t.Logf("pod watch %d from resourceVersion %q, sendInitialEvents %v (the one before ended after %v)",
					n, o.ResourceVersion, ptr.Deref(o.SendInitialEvents, false), time.Since(since).Round(time.Millisecond))
			}
			since = time.Now()
			return pods.Watch(ctx, o)
		},
	}
}

// expect registers a waiter for the pod name; call it before creating the pod.
func (pp *podPhases) expect(name string) <-chan podSeen {
	ch := make(chan podSeen, 1)
	pp.mu.Lock()
	defer pp.mu.Unlock()
	pp.waiting[name] = ch
	return ch
}

// seen hands a pod that runs or has ended to its waiter, once.
func (pp *podPhases) seen(obj any) {
	at := time.Now()
	p, ok := obj.(*corev1.Pod)
	if !ok || !runningOrEnded(p) {
		return
	}
	pp.mu.Lock()
	ch := pp.waiting[p.Name]
	delete(pp.waiting, p.Name)
	pp.mu.Unlock()
	if ch != nil {
		ch <- podSeen{at: at, pod: p.DeepCopy()}
	}
}

func runningOrEnded(p *corev1.Pod) bool {
	switch p.Status.Phase {
	case corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed:
		return true
	}
	return false
}
