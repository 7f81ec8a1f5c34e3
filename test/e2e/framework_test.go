//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/utils/ptr"
)

// Resource names of the plugin contract (issue 5).
const (
	rdmaResource  = corev1.ResourceName("ringcap.io/rdma")
	testNamespace = "ringcap-e2e"
)

var (
	gvrRDMANode    = schema.GroupVersionResource{Group: "ringcap.io", Version: "v1alpha1", Resource: "rdmanodes"}
	gvrRingCapture = schema.GroupVersionResource{Group: "ringcap.io", Version: "v1alpha1", Resource: "ringcaptures"}
)

// suite is the configuration and the clients shared by every step.
type suite struct {
	cfg       *rest.Config
	cs        kubernetes.Interface
	dyn       dynamic.Interface
	tag       string
	node      string
	devices   []string
	pull      corev1.PullPolicy
	namespace string
	helm      string
	helmSet   []string // RINGCAP_E2E_HELM_SET: more --set values for step 1's install
	chart     string
}

var s *suite

func TestMain(m *testing.M) {
	var err error
	s, err = newSuite()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func newSuite() (*suite, error) {
	kc := os.Getenv("KUBECONFIG")
	if kc == "" {
		return nil, fmt.Errorf("KUBECONFIG is not set: run through `make e2e` (or `make e2e-kind`), or point it at a cluster with an RDMA node")
	}
	tag := os.Getenv("RINGCAP_E2E_IMAGE_TAG")
	if tag == "" {
		return nil, fmt.Errorf("RINGCAP_E2E_IMAGE_TAG is not set: the tag of the ringcap/* images on the node (hack/images/build.sh prints it)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", kc, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	st := &suite{cfg: cfg, cs: cs, dyn: dyn, tag: tag,
		node:      os.Getenv("RINGCAP_E2E_NODE"),
		devices:   strings.Split(envOr("RINGCAP_E2E_DEVICES", "rxe0,rxe1"), ","),
		pull:      corev1.PullPolicy(envOr("RINGCAP_E2E_PULL_POLICY", string(corev1.PullNever))),
		namespace: envOr("RINGCAP_E2E_NAMESPACE", "ringcap-system"),
		helm:      envOr("HELM", "helm"),
	}
	if v := os.Getenv("RINGCAP_E2E_HELM_SET"); v != "" {
		st.helmSet = strings.Split(v, ",")
	}
	if st.chart, err = filepath.Abs("../../charts/ringcap"); err != nil {
		return nil, err
	}
	if st.node == "" {
		nodes, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list nodes: %w", err)
		}
		if len(nodes.Items) != 1 {
			return nil, fmt.Errorf("RINGCAP_E2E_NODE is not set and the cluster has %d nodes", len(nodes.Items))
		}
		st.node = nodes.Items[0].Name
	}
	return st, nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func (st *suite) image(name string) string { return "ringcap/" + name + ":" + st.tag }

// waitFor polls cond every half second until it reports done, returns an error, or the
// (liveness, not performance) limit passes; the last observation is part of the failure.
func waitFor(t *testing.T, limit time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	ok, seen, err := poll(limit, cond)
	switch {
	case err != nil:
		t.Fatalf("%s: %v", what, err)
	case !ok:
		t.Fatalf("%s: not reached within %v; last seen: %s", what, limit, seen)
	}
	t.Logf("%s: %s", what, seen)
}

// attemptLimit bounds one check of a poll: a request that hangs (an API server stalled
// under emulation, a connection gone dead) is retried, not waited on for the whole limit.
const attemptLimit = 20 * time.Second

// poll checks cond every half second until it holds (ok), it fails (err) or
// limit passes (not ok); seen is what cond saw last. Each check gets at most
// attemptLimit. It is waitFor for a step that has more to collect before it can fail.
func poll(limit time.Duration, cond func(ctx context.Context) (bool, string, error)) (ok bool, seen string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(ctx, attemptLimit)
		done, s, err := cond(actx)
		acancel()
		if err != nil || done {
			return done, s, err
		}
		seen = s
		select {
		case <-ctx.Done():
			return false, seen, nil
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// helmCmd runs helm and returns its combined output.
func (st *suite) helmCmd(args ...string) (string, error) {
	cmd := exec.Command(st.helm, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+os.Getenv("KUBECONFIG"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	_, err := s.cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// restrictedContainer makes c satisfy the "restricted" Pod Security Standard.
func restricted(c *corev1.Container) {
	c.SecurityContext = &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To[int64](65532),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// shellPod is a one-shot pod of the data-plane image on the RDMA node running script with sh.
func shellPod(name, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, Labels: map[string]string{"app.kubernetes.io/part-of": "ringcap-e2e"}},
		Spec: corev1.PodSpec{
			NodeName:                      s.node,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "main", Image: s.image("ringcap"), ImagePullPolicy: s.pull,
				Command: []string{"/bin/sh", "-c", script},
			}},
		},
	}
}

// runPod creates pod, waits until it has terminated and returns its phase and the logs of its
// first container. The pod is deleted at the end of the test.
func runPod(t *testing.T, pod *corev1.Pod, limit time.Duration) (corev1.PodPhase, string) {
	t.Helper()
	ctx := context.Background()
	pods := s.cs.CoreV1().Pods(pod.Namespace)
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", pod.Name, err)
	}
	t.Cleanup(func() { deletePodAndWait(t, pod.Namespace, pod.Name) })
	var phase corev1.PodPhase
	waitFor(t, limit, "pod "+pod.Name+" terminated", func(ctx context.Context) (bool, string, error) {
		p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return retry(err)
		}
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, podSummary(p), nil
	})
	return phase, podLogs(t, pod.Namespace, pod.Name, pod.Spec.Containers[0].Name)
}

func podLogs(t *testing.T, ns, name, container string) string {
	t.Helper()
	b, err := s.cs.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: container}).DoRaw(context.Background())
	if err != nil {
		t.Fatalf("logs of %s/%s[%s]: %v", ns, name, container, err)
	}
	return string(b)
}

func podSummary(p *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s node=%s", p.Status.Phase, p.Spec.NodeName)
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			fmt.Fprintf(&b, " %s=%s(%s)", c.Type, c.Reason, c.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			fmt.Fprintf(&b, " %s:waiting(%s %s)", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
		case cs.State.Terminated != nil:
			fmt.Fprintf(&b, " %s:exit=%d", cs.Name, cs.State.Terminated.ExitCode)
		case cs.State.Running != nil:
			fmt.Fprintf(&b, " %s:running", cs.Name)
		}
	}
	if p.Status.Message != "" {
		fmt.Fprintf(&b, " message=%q", p.Status.Message)
	}
	return b.String()
}

func deletePodAndWait(t *testing.T, ns, name string) {
	t.Helper()
	pods := s.cs.CoreV1().Pods(ns)
	err := pods.Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)})
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		t.Errorf("delete pod %s/%s: %v", ns, name, err)
		return
	}
	waitFor(t, 2*time.Minute, "pod "+ns+"/"+name+" deleted", func(ctx context.Context) (bool, string, error) {
		_, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "gone", nil
		}
		return false, fmt.Sprint(err), nil
	})
}

// execIn runs cmd in a container through the API server and the kubelet; it returns stdout.
func execIn(t *testing.T, ns, pod, container string, cmd ...string) (string, error) {
	t.Helper()
	req := s.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(s.cfg, "POST", req.URL())
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		return stdout.String(), fmt.Errorf("exec %v in %s/%s[%s]: %w (stderr %q)", cmd, ns, pod, container, err, stderr.String())
	}
	return stdout.String(), nil
}

// retry is a waitFor condition's answer to an API error that may be transient (the API server
// or the kubelet restarting): keep polling, and report the error if the wait times out.
func retry(err error) (bool, string, error) { return false, "error: " + err.Error(), nil }

// waitPod waits until the pod name in the test namespace satisfies ok (API errors are
// asked again).
func waitPod(t *testing.T, name string, limit time.Duration, what string, ok func(*corev1.Pod) bool) {
	t.Helper()
	waitFor(t, limit, what, func(ctx context.Context) (bool, string, error) {
		p, err := s.cs.CoreV1().Pods(testNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return retry(err)
		}
		return ok(p), podSummary(p), nil
	})
}
