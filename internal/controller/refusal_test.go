package controller

import (
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

func TestIsRefusal(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"admission (PriorityClass, Pod Security, quota)", apierrors.NewForbidden(pods, "c-capture", errors.New("no PriorityClass with name does-not-exist was found")), true},
		{"validation (requests above limits)", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "c-capture",
			field.ErrorList{field.Invalid(field.NewPath("spec", "containers").Index(0).Child("resources", "requests"), "2", "must be less than or equal to cpu limit")}), true},
		{"bad request", apierrors.NewBadRequest("bad"), true},
		{"wrapped", fmt.Errorf("create pod: %w", apierrors.NewForbidden(pods, "c-capture", errors.New("exceeded quota"))), true},
		{"timeout", apierrors.NewTimeoutError("slow", 1), false},
		{"server error", apierrors.NewInternalError(errors.New("etcd")), false},
		{"unavailable", apierrors.NewServiceUnavailable("down"), false},
		{"conflict", apierrors.NewConflict(pods, "c-capture", errors.New("changed")), false},
	} {
		if got := isRefusal(tc.err); got != tc.want {
			t.Errorf("%s: isRefusal = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRefusalRetry(t *testing.T) {
	since := func(d time.Duration) ringcapv1.RingCaptureStatus {
		return ringcapv1.RingCaptureStatus{Conditions: []metav1.Condition{{Type: ringcapv1.ConditionScheduled,
			Status: metav1.ConditionFalse, Reason: ringcapv1.ReasonPodRefused, LastTransitionTime: metav1.NewTime(t0.Add(-d))}}}
	}
	for _, tc := range []struct {
		name string
		st   ringcapv1.RingCaptureStatus
		want time.Duration
	}{
		{"no status yet", ringcapv1.RingCaptureStatus{}, time.Second},
		{"just refused", since(0), time.Second},
		{"refused 8 s ago", since(8 * time.Second), 8 * time.Second},
		{"refused an hour ago", since(time.Hour), time.Minute},
	} {
		if got := refusalRetry(tc.st, t0.Time); got != tc.want {
			t.Errorf("%s: refusalRetry = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A refused pod is a status (phase, conditions, the API server's message), not nothing.
func TestComputeStatusPodRefused(t *testing.T) {
	msg := `the API server refused capture pod c-capture: pods "c-capture" is forbidden: no PriorityClass with name does-not-exist was found`
	st := ComputeStatus(defaulted("c"), Observed{PodProblem: msg, ProblemReason: ringcapv1.ReasonPodRefused, Now: t0})
	if st.Phase != ringcapv1.PhasePending {
		t.Errorf("phase %q, want Pending", st.Phase)
	}
	for _, typ := range []string{ringcapv1.ConditionScheduled, ringcapv1.ConditionReady} {
		c := apimeta.FindStatusCondition(st.Conditions, typ)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ringcapv1.ReasonPodRefused || c.Message != msg {
			t.Errorf("condition %s = %+v, want False/PodRefused with the API server's message", typ, c)
		}
	}
}
