package controller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

func TestHeaderCondition(t *testing.T) {
	ring := func(h *ringcapv1.RingHeaderSpec) ringcapv1.RingSpec {
		return ringcapv1.RingSpec{HeaderBlockBytes: 4096, Header: h}
	}
	values := func(kv ...string) *ringcapv1.RingHeaderSpec {
		h := &ringcapv1.RingHeaderSpec{Values: map[string]ringcapv1.HeaderValue{}}
		for i := 0; i < len(kv); i += 2 {
			h.Values[kv[i]] = ringcapv1.HeaderValue(kv[i+1])
		}
		return h
	}
	cmRef := &ringcapv1.RingHeaderSpec{ConfigMapRef: &ringcapv1.ConfigMapKeyReference{Name: "hdr", Key: "obs"}}
	tests := []struct {
		name     string
		ring     ringcapv1.RingSpec
		template []byte
		missing  string
		status   metav1.ConditionStatus
		reason   string
		msg      string
	}{
		{"no header", ring(nil), nil, "", metav1.ConditionTrue, ringcapv1.ReasonHeaderValid, "fits ring.headerBlockBytes (4096 bytes)"},
		{"values", ring(values("SOURCE", "J0437-4715")), nil, "", metav1.ConditionTrue, ringcapv1.ReasonHeaderValid, ""},
		{"a value with a space", ring(values("OBSERVER", "Jane Doe")), nil, "", metav1.ConditionFalse, ringcapv1.ReasonHeaderInvalid,
			`header from ring.header.values: keyword OBSERVER, value "Jane Doe"`},
		{"configmap missing", ring(cmRef), nil, "ConfigMap hdr (ring.header.configMapRef) does not exist", metav1.ConditionFalse,
			ringcapv1.ReasonHeaderConfigMapNotFound, "does not exist; the capture pod is created once it does"},
		{"configmap template", ring(cmRef), []byte("TELESCOPE Parkes\nHDR_SIZE 4096\n"), "", metav1.ConditionTrue, ringcapv1.ReasonHeaderValid, ""},
		{"configmap template with TRANSFER_SIZE", ring(cmRef), []byte("TRANSFER_SIZE 1\n"), "", metav1.ConditionFalse, ringcapv1.ReasonHeaderInvalid,
			"header from ConfigMap hdr key obs with ring.header.values: keyword TRANSFER_SIZE: forbidden"},
		{"configmap template not ASCII", ring(cmRef), []byte("OBSERVER J\xfcrgen\n"), "", metav1.ConditionFalse, ringcapv1.ReasonHeaderInvalid, "not a PSRDADA ASCII header"},
		{"template too large", ring(&ringcapv1.RingHeaderSpec{Template: "X"}), []byte("COMMENT " + strings.Repeat("x", 4000) + "\n"), "",
			metav1.ConditionFalse, ringcapv1.ReasonHeaderInvalid, "more than the 4096-byte header block"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := HeaderCondition(tt.ring, tt.template, tt.missing)
			if c.Type != ringcapv1.ConditionHeaderValid || c.Status != tt.status || c.Reason != tt.reason || !strings.Contains(c.Message, tt.msg) {
				t.Errorf("HeaderCondition = %+v, want %s %s saying %q", c, tt.status, tt.reason, tt.msg)
			}
		})
	}
}

func TestSetHeaderValid(t *testing.T) {
	rc := &ringcapv1.RingCapture{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Spec: ringcapv1.RingCaptureSpec{Ring: ringcapv1.RingSpec{HeaderBlockBytes: 4096}}}
	pod := func(gen string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationGeneration: gen}}}
	}
	now := metav1.Now()
	tests := []struct {
		name   string
		pod    *corev1.Pod
		hp     *headerProblem
		status metav1.ConditionStatus // "" for no condition
	}{
		{"held back by its header", nil, &headerProblem{ringcapv1.ReasonHeaderInvalid, "bad"}, metav1.ConditionFalse},
		{"a pod of this generation", pod("3"), nil, metav1.ConditionTrue},
		{"a pod of an older generation", pod("2"), nil, ""},
		{"no pod, nothing checked", nil, nil, ""},
	}
	for _, tt := range tests {
		var st ringcapv1.RingCaptureStatus
		setHeaderValid(&st, rc, tt.pod, tt.hp, now)
		var got metav1.ConditionStatus
		for _, c := range st.Conditions {
			if c.Type == ringcapv1.ConditionHeaderValid {
				got = c.Status
				if c.ObservedGeneration != 3 {
					t.Errorf("%s: observedGeneration %d", tt.name, c.ObservedGeneration)
				}
			}
		}
		if got != tt.status {
			t.Errorf("%s: HeaderValid %q, want %q", tt.name, got, tt.status)
		}
	}
}
