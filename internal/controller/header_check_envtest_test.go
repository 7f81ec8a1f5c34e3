//go:build envtest

package controller_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/internal/controller"
)

// A header the receiver could not build (its ConfigMap missing, a template with
// TRANSFER_SIZE or too large for the header block) keeps the pod from being created,
// with HeaderValid and Ready False saying why; once the header is fixed the pod is
// created and HeaderValid is True.
func TestHeaderConfigMapChecked(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	ns := newNamespace(t, "header-check")
	rc := newCapture(t, ns, "hdr", func(rc *ringcapv1.RingCapture) {
		rc.Spec.Ring.Header = &ringcapv1.RingHeaderSpec{ConfigMapRef: &ringcapv1.ConfigMapKeyReference{Name: "obs-header"},
			Values: map[string]ringcapv1.HeaderValue{"SOURCE": "J0437-4715"}}
	})
	expectHeld := func(reason, msg string) {
		t.Helper()
		got := waitCapture(t, ns, "hdr", reason, func(rc *ringcapv1.RingCapture) bool {
			return conditionIs(rc, ringcapv1.ConditionHeaderValid, metav1.ConditionFalse, reason) &&
				strings.Contains(condition(rc, ringcapv1.ConditionHeaderValid).Message, msg)
		})
		if ready := condition(got, ringcapv1.ConditionReady); ready.Status != metav1.ConditionFalse || ready.Reason != reason || !strings.Contains(ready.Message, msg) {
			t.Errorf("Ready = %+v, want False with %s saying %q", ready, reason, msg)
		}
		if got.Status.Phase != ringcapv1.PhasePending {
			t.Errorf("phase %q, want Pending", got.Status.Phase)
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: controller.PodName("hdr")}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
			t.Errorf("pod of a capture whose header cannot work: %v, want none", err)
		}
	}
	expectHeld(ringcapv1.ReasonHeaderConfigMapNotFound, "ConfigMap obs-header (ring.header.configMapRef) does not exist")
	waitEvent(t, ns, "hdr", ringcapv1.ReasonHeaderConfigMapNotFound, corev1.EventTypeWarning)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "obs-header"},
		Data: map[string]string{"header": "HDR_VERSION 1.0\nTRANSFER_SIZE 1048576\n"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	touch(t, rc)
	expectHeld(ringcapv1.ReasonHeaderInvalid, "keyword TRANSFER_SIZE: forbidden")

	setData := func(text string) {
		t.Helper()
		cm.Data = map[string]string{"header": text}
		if err := env.Client.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
		touch(t, rc)
	}
	setData("HDR_VERSION 1.0\nCOMMENT " + strings.Repeat("x", 4000) + "\n")
	expectHeld(ringcapv1.ReasonHeaderInvalid, "more than the 4096-byte header block")
	setData("HDR_VERSION 1.0\nUTC_START yesterday\n")
	expectHeld(ringcapv1.ReasonHeaderInvalid, `UTC_START "yesterday"`)

	setData("HDR_VERSION 1.0\nHDR_SIZE 4096\nTELESCOPE Parkes\n")
	waitPod(t, ns, "hdr")
	waitCapture(t, ns, "hdr", "HeaderValid", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionHeaderValid, metav1.ConditionTrue, ringcapv1.ReasonHeaderValid)
	})
}

// An inline template the CEL rules cannot judge (a malformed UTC_START) is checked
// the same way.
func TestHeaderTemplateChecked(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "header-template")
	newCapture(t, ns, "utc", func(rc *ringcapv1.RingCapture) {
		rc.Spec.Ring.Header = &ringcapv1.RingHeaderSpec{Template: "HDR_VERSION 1.0\nUTC_START 2026-02-30-00:00:00\n"}
	})
	waitCapture(t, ns, "utc", "HeaderInvalid", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionHeaderValid, metav1.ConditionFalse, ringcapv1.ReasonHeaderInvalid) &&
			strings.Contains(condition(rc, ringcapv1.ConditionHeaderValid).Message, "header from ring.header.template")
	})
	newCapture(t, ns, "fine", func(rc *ringcapv1.RingCapture) {
		rc.Spec.Ring.Header = &ringcapv1.RingHeaderSpec{Template: "HDR_VERSION 1.0\nUTC_START 2026-02-28-00:00:00\n"}
	})
	waitPod(t, ns, "fine")
	waitCapture(t, ns, "fine", "HeaderValid", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionHeaderValid, metav1.ConditionTrue, ringcapv1.ReasonHeaderValid)
	})
}
