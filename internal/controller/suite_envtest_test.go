//go:build envtest

package controller_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/internal/controller"
	"github.com/ringcap/ringcap/internal/testenv"
	"github.com/ringcap/ringcap/internal/testkit"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

const (
	operatorNamespace = "ringcap-system"
	// waitTimeout bounds how long a test waits for the operator before it fails; it is
	// not an assertion about speed.
	waitTimeout = 60 * time.Second
)

var (
	env       *testenv.Env
	opConfig  *rest.Config
	receivers *fakeReceivers
)

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	// Operator logs: errors only, so a failing test's output stays readable.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	var err error
	env, err = testenv.Start()
	if err != nil {
		return 1, err
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop envtest:", err)
		}
	}()
	ctx := context.Background()
	// The operator runs as a user with exactly config/rbac's permissions.
	if opConfig, err = env.OperatorConfig(ctx, operatorNamespace); err != nil {
		return 1, err
	}
	// The garbage collector deletes a deleted RingCapture's pod; the ClusterRole
	// aggregation fills the built-in edit and view roles (chart_rbac_envtest_test.go).
	if err := env.StartControllerManager(ctx, "garbagecollector", "clusterrole-aggregation"); err != nil {
		return 1, err
	}
	receivers = newFakeReceivers()
	defer receivers.Close()
	return m.Run(), nil
}

// fakeReceivers is a real HTTP server standing in for the receivers' /status (pod IPs
// are not reachable in envtest: no kubelet, no pod network). The operator's status
// URL resolution is pointed at it.
type fakeReceivers struct {
	srv *httptest.Server
	mu  sync.Mutex
	st  map[string][]byte // "ns/pod" -> JSON
}

func newFakeReceivers() *fakeReceivers {
	f := &fakeReceivers{st: map[string][]byte{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		body, ok := f.st[strings.TrimPrefix(r.URL.Path, "/status/")]
		f.mu.Unlock()
		if !ok {
			http.Error(w, "no receiver", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	return f
}

func (f *fakeReceivers) URL(pod *corev1.Pod, _ int32) (string, error) {
	return f.srv.URL + "/status/" + pod.Namespace + "/" + pod.Name, nil
}

func (f *fakeReceivers) Set(ns, pod string, st statusdoc.Status) {
	b, err := json.Marshal(st)
	if err != nil {
		panic(err)
	}
	f.mu.Lock()
	f.st[ns+"/"+pod] = b
	f.mu.Unlock()
}

func (f *fakeReceivers) Close() { f.srv.Close() }

// operator is a running operator (manager + RingCapture controller).
type operator struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the manager has returned
	err    error         // the manager's result, set before done is closed
}

// operators are the operators the running test has started and not stopped (the
// tests run one at a time).
var operators []*operator

// testPollInterval is the operator's /status poll in most tests: shorter than the
// shipped statusPollInterval so that they see receiver progress quickly.
const testPollInterval = 200 * time.Millisecond

// Leader election as the tests run it: the shipped Lease and RBAC, with a renew
// deadline that a loaded CI machine (2 cores shared with etcd, kube-apiserver and
// the garbage collector) cannot miss. Losing the lease is not what these tests are
// about; if it happens anyway, operatorExited makes every wait fail at once with
// the cause.
var (
	testLeaseDuration = 60 * time.Second
	testRenewDeadline = 45 * time.Second
	testRetryPeriod   = 2 * time.Second
)

// startOperator starts an operator that polls receivers every testPollInterval.
func startOperator(tb testing.TB) *operator {
	tb.Helper()
	return startOperatorPolling(tb, testPollInterval)
}

// startOperatorPolling starts an operator that polls each running receiver's
// /status every poll (0: the shipped interval).
func startOperatorPolling(tb testing.TB, poll time.Duration) *operator {
	tb.Helper()
	return startOperatorAs(tb, operatorRun{cfg: opConfig, leNamespace: operatorNamespace, poll: poll})
}

// operatorRun is who an operator runs as (cfg), where its Lease is, the namespaces it
// watches (--namespace; none: all) and its /status poll.
type operatorRun struct {
	cfg         *rest.Config
	leNamespace string
	namespaces  []string
	poll        time.Duration
}

func startOperatorAs(tb testing.TB, run operatorRun) *operator {
	tb.Helper()
	poll := run.poll
	cfg := rest.CopyConfig(run.cfg)
	cfg.QPS, cfg.Burst = 50, 100 // the operator's defaults (--kube-api-qps, --kube-api-burst)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        testenv.NewScheme(),
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                true,
		LeaderElectionID:              "ringcap-operator.ringcap.io",
		LeaderElectionNamespace:       run.leNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &testLeaseDuration,
		RenewDeadline:                 &testRenewDeadline,
		RetryPeriod:                   &testRetryPeriod,
		Cache:                         controller.CacheOptions(run.namespaces),
		Controller:                    config.Controller{SkipNameValidation: ptr(true)},
	})
	if err != nil {
		tb.Fatalf("create manager: %v", err)
	}
	opts := controller.DefaultPodOptions()
	opts.ReceiverImage = "ringcap/ringcap:test"
	r := &controller.RingCaptureReconciler{
		Client:       mgr.GetClient(),
		APIReader:    mgr.GetAPIReader(),
		Scheme:       mgr.GetScheme(),
		Recorder:     mgr.GetEventRecorder("ringcap-operator"),
		Pods:         opts,
		Fetcher:      &controller.HTTPStatusFetcher{Client: &http.Client{Timeout: 5 * time.Second}, URL: receivers.URL},
		PollInterval: poll,
	}
	if err := r.SetupWithManager(mgr, ctrlcontroller.Options{MaxConcurrentReconciles: 8}); err != nil {
		tb.Fatalf("set up controller: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	op := &operator{cancel: cancel, done: make(chan struct{})}
	go func() {
		op.err = mgr.Start(ctx)
		close(op.done)
	}()
	operators = append(operators, op)
	tb.Cleanup(func() { op.Stop(tb) })
	return op
}

// Stop stops the operator and waits for it (idempotent).
func (o *operator) Stop(tb testing.TB) {
	if o.cancel == nil {
		return
	}
	o.cancel()
	o.cancel = nil
	<-o.done
	operators = slices.DeleteFunc(operators, func(p *operator) bool { return p == o })
	if o.err != nil {
		tb.Errorf("operator exited with %v", o.err)
	}
}

// operatorExited returns an error when an operator the test started and did not
// stop has exited (lost its leader election, say): nothing would then make a wait's
// condition true.
func operatorExited() error {
	for _, o := range operators {
		select {
		case <-o.done:
			if o.err == nil {
				return errors.New("the operator exited on its own")
			}
			return fmt.Errorf("the operator exited on its own: %w", o.err)
		default:
		}
	}
	return nil
}

// waitFor polls cond until it holds, timeout passes or the operator exits.
func waitFor(timeout time.Duration, cond func() (bool, string)) error {
	return testkit.Eventually(timeout, operatorExited, cond)
}

func ptr[T any](v T) *T { return &v }

func newNamespace(tb testing.TB, name string) string {
	tb.Helper()
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		tb.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// newCapture creates a RingCapture (the API server applies the schema defaults). A
// capture left without reader containers leaves its reader slot to a reader on the node
// (ring.hostIPC), as the API requires: these tests are about the receiver and the pod.
func newCapture(tb testing.TB, ns, name string, mod func(rc *ringcapv1.RingCapture)) *ringcapv1.RingCapture {
	tb.Helper()
	rc := &ringcapv1.RingCapture{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if mod != nil {
		mod(rc)
	}
	if len(rc.Spec.Readers) == 0 {
		rc.Spec.Ring.HostIPC = true
	}
	if err := env.Client.Create(context.Background(), rc); err != nil {
		tb.Fatalf("create RingCapture %s/%s: %v", ns, name, err)
	}
	return rc
}

func getCapture(tb testing.TB, ns, name string) *ringcapv1.RingCapture {
	tb.Helper()
	rc := &ringcapv1.RingCapture{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, rc); err != nil {
		tb.Fatalf("get RingCapture %s/%s: %v", ns, name, err)
	}
	return rc
}

// waitCapture waits until cond holds for the RingCapture and returns it.
func waitCapture(tb testing.TB, ns, name, what string, cond func(rc *ringcapv1.RingCapture) bool) *ringcapv1.RingCapture {
	tb.Helper()
	var rc *ringcapv1.RingCapture
	err := waitFor(waitTimeout, func() (bool, string) {
		rc = &ringcapv1.RingCapture{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, rc); err != nil {
			return false, err.Error()
		}
		return cond(rc), fmt.Sprintf("status %+v", rc.Status)
	})
	if err != nil {
		tb.Fatalf("RingCapture %s/%s: waiting for %s: %v", ns, name, what, err)
	}
	return rc
}

func waitPod(tb testing.TB, ns, rcName string) *corev1.Pod {
	tb.Helper()
	pod := &corev1.Pod{}
	err := waitFor(waitTimeout, func() (bool, string) {
		err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: controller.PodName(rcName)}, pod)
		return err == nil, fmt.Sprint(err)
	})
	if err != nil {
		tb.Fatalf("pod of RingCapture %s/%s: %v", ns, rcName, err)
	}
	return pod
}

// updatePodStatus changes a pod's status as the kubelet or the scheduler would.
func updatePodStatus(tb testing.TB, pod *corev1.Pod, mod func(p *corev1.Pod)) *corev1.Pod {
	tb.Helper()
	ctx := context.Background()
	for {
		cur := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), cur); err != nil {
			tb.Fatalf("get pod %s: %v", pod.Name, err)
		}
		mod(cur)
		err := env.Client.Status().Update(ctx, cur)
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			tb.Fatalf("update status of pod %s: %v", pod.Name, err)
		}
		return cur
	}
}

// bindPod assigns a pod to a node through the binding subresource, as the scheduler does.
func bindPod(tb testing.TB, pod *corev1.Pod, node string) {
	tb.Helper()
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := env.Client.SubResource("binding").Create(context.Background(), pod, b); err != nil {
		tb.Fatalf("bind pod %s to %s: %v", pod.Name, node, err)
	}
}

// runPod marks a bound pod Running with every container running, as the kubelet would.
func runPod(tb testing.TB, pod *corev1.Pod, ip string) *corev1.Pod {
	return updatePodStatus(tb, pod, func(p *corev1.Pod) {
		now := metav1.Now()
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP, p.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
		p.Status.StartTime = &now
		p.Status.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: c.Name, Image: c.Image, ImageID: "sha256:0", Ready: true, Started: ptr(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			})
		}
	})
}

// terminateContainers marks the named containers terminated with the given exit code
// and termination message, and sets the pod phase.
func terminateContainers(tb testing.TB, pod *corev1.Pod, phase corev1.PodPhase, exit map[string]int32, message map[string]string) {
	updatePodStatus(tb, pod, func(p *corev1.Pod) {
		now := metav1.Now()
		for i, cs := range p.Status.ContainerStatuses {
			code, ok := exit[cs.Name]
			if !ok {
				continue
			}
			reason := "Completed"
			if code != 0 {
				reason = "Error"
			}
			p.Status.ContainerStatuses[i].Ready = false
			p.Status.ContainerStatuses[i].Started = ptr(false)
			p.Status.ContainerStatuses[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: code, Reason: reason, Message: message[cs.Name], StartedAt: now, FinishedAt: now, ContainerID: "containerd://" + cs.Name,
			}}
		}
		p.Status.Phase = phase
	})
}

func receiverStatus(state string, bytes int64) statusdoc.Status {
	var st statusdoc.Status
	st.Version, st.State, st.BytesReceived = 1, state, uint64(bytes)
	st.BlocksFilled = uint64(bytes / 524288)
	st.Ring.Key, st.Ring.Ready, st.Ring.Blocks, st.Ring.BlockBytes, st.Ring.Readers = "dada", state != "Starting", 4, 524288, 1
	st.Endpoint.Address, st.Endpoint.Port, st.Endpoint.Device, st.Endpoint.IBPort = "10.88.0.5", 18515, "rxe0", 1
	st.Endpoint.GIDIndex, st.Endpoint.GID, st.Endpoint.Netdev = ptr(1), "::ffff:198.18.0.1", "veth0"
	st.MemoryRegistration.Mode, st.MemoryRegistration.Regions, st.MemoryRegistration.Bytes = "WholeRing", 1, 4*524288
	st.MemoryRegistration.Reason = "blocks contiguous"
	st.QueuePairs, st.TransferMode = 4, "send"
	if state == "Receiving" {
		st.RateBytesPerSecond = 1.25e9
	}
	st.StartTime = "2026-11-21T15:00:00Z"
	return st
}

func conditionIs(rc *ringcapv1.RingCapture, typ string, status metav1.ConditionStatus, reason string) bool {
	for _, c := range rc.Status.Conditions {
		if c.Type == typ {
			return c.Status == status && c.Reason == reason && c.ObservedGeneration == rc.Generation
		}
	}
	return false
}

func condition(rc *ringcapv1.RingCapture, typ string) metav1.Condition {
	for _, c := range rc.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// waitEvent waits for an event about the RingCapture with the given reason and type.
func waitEvent(tb testing.TB, ns, name, reason, typ string) eventsv1.Event {
	tb.Helper()
	var found eventsv1.Event
	err := waitFor(waitTimeout, func() (bool, string) {
		var list eventsv1.EventList
		if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Regarding.Kind == "RingCapture" {
				seen = append(seen, e.Reason)
				if e.Reason == reason && e.Type == typ {
					found = e
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("events so far: %v", seen)
	})
	if err != nil {
		tb.Fatalf("event %s (%s) about %s/%s: %v", reason, typ, ns, name, err)
	}
	return found
}

// ownedPods lists the pods in ns controlled by the RingCapture.
func ownedPods(tb testing.TB, rc *ringcapv1.RingCapture) []corev1.Pod {
	tb.Helper()
	var list corev1.PodList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(rc.Namespace)); err != nil {
		tb.Fatalf("list pods: %v", err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if metav1.IsControlledBy(&p, rc) {
			out = append(out, p)
		}
	}
	return out
}
