//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// draMetricsPort is the chart's plugin.metrics.port.
const draMetricsPort = 9101

// stepDRADriverObservable runs after step 9 (plugin.mode both, one claim prepared): the
// driver's pod passed its startup probe (/healthz calls its sockets as the kubelet does);
// read from the node, /healthz answers ok and /metrics says the kubelet registered the
// driver, how many devices it published and that it prepared a claim. A token bound to
// the driver's pod (it names the node, as the pod's own token does) may write its node's
// ResourceSlices and is refused another node's by the chart's policy (server-side dry runs).
func stepDRADriverObservable(t *testing.T) {
	pod := draDriverPod(t)
	if cs := pod.Status.ContainerStatuses; len(cs) != 1 || cs[0].Started == nil || !*cs[0].Started {
		t.Errorf("driver pod %s has not passed its startup probe: %s", pod.Name, podSummary(pod))
	}
	base := fmt.Sprintf("http://%s:%d", pod.Status.PodIP, draMetricsPort)
	out, rc, err := guestRun("dra-metrics", "curl -sSf "+base+"/healthz && curl -sSf "+base+"/metrics | grep '^ringcap_dra_'", time.Minute)
	if err != nil || rc != 0 {
		t.Fatalf("curl %s from the node: rc %d, %v:\n%s", base, rc, err, out)
	}
	t.Logf("driver metrics:\n%s", out)
	if !strings.HasPrefix(out, "ok\n") {
		t.Errorf("/healthz did not answer ok:\n%s", out)
	}
	for series, least := range map[string]float64{
		`ringcap_dra_registered`:                                    1,
		`ringcap_dra_published_devices`:                             1,
		`ringcap_dra_claims_total{operation="prepare",result="ok"}`: 1,
	} {
		if v, ok := metricValue(out, series); !ok || v < least {
			t.Errorf("%s = %v (found %v), want at least %v", series, v, ok, least)
		}
	}
	checkSlicePolicy(t, pod)
}

// draDriverPod is the DRA driver's pod on the node.
func draDriverPod(t *testing.T) *corev1.Pod {
	t.Helper()
	l, err := s.cs.CoreV1().Pods(s.namespace).List(context.Background(), metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/component=dra", FieldSelector: "spec.nodeName=" + s.node})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 {
		t.Fatalf("%d DRA driver pods on %s, want 1", len(l.Items), s.node)
	}
	return &l.Items[0]
}

// metricValue is the value of series (name and labels as exposed) in a metrics text.
func metricValue(text, series string) (float64, bool) {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(text)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

// checkSlicePolicy writes ResourceSlices (dry run) with a token bound to the driver's pod.
func checkSlicePolicy(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	tr, err := s.cs.CoreV1().ServiceAccounts(s.namespace).CreateToken(ctx, pod.Spec.ServiceAccountName, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600),
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s bound to %s: %v", pod.Spec.ServiceAccountName, pod.Name, err)
	}
	cfg := rest.AnonymousClientConfig(s.cfg)
	cfg.BearerToken = tr.Status.Token
	slices := kubernetes.NewForConfigOrDie(cfg).ResourceV1().ResourceSlices()
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	for node, refused := range map[string]bool{s.node: false, "e2e-another-node": true} {
		sl := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-policy-"}, Spec: resourcev1.ResourceSliceSpec{
			Driver: draDriver, NodeName: ptr.To(node), Pool: resourcev1.ResourcePool{Name: "e2e-policy", ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "d0"}}}}
		_, err := slices.Create(ctx, sl, dry)
		switch {
		case refused && (err == nil || !strings.Contains(err.Error(), "denied request")):
			t.Errorf("the driver's token wrote a slice of node %s: %v, want the slice policy's refusal", node, err)
		case !refused && err != nil:
			t.Errorf("the driver's token may not write its own node's (%s) slice: %v", node, err)
		}
	}
}
