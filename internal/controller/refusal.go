package controller

import (
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// Retries of a pod the API server refused: the first soon, then after as long as the
// refusal has lasted (1 s, 2 s, 4 s, ...), at most refusalRetryMax apart. Nothing the
// operator watches changes when the cause is fixed elsewhere (a PriorityClass created,
// a quota raised, the namespace's Pod Security level changed), so it must look again.
const (
	refusalRetryMin = time.Second
	refusalRetryMax = time.Minute
)

// podRefusal is the API server's refusal of the capture pod (admission or validation):
// shown in the status instead of a pod, and tried again with back-off.
type podRefusal struct {
	msg string
}

func (p *podRefusal) Error() string { return p.msg }

// isRefusal says whether err is the API server refusing an object (a verdict on the
// object or on the request, which a retry of the same request does not change before
// something else changes), rather than a failure to reach it.
func isRefusal(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) ||
		apierrors.IsRequestEntityTooLargeError(err)
}

// refusalRetry is how long a capture whose pod (or claim template) was refused waits
// before trying again: as long as the refusal has lasted, within [refusalRetryMin,
// refusalRetryMax]. The refusal began when the Scheduled condition last changed.
func refusalRetry(st ringcapv1.RingCaptureStatus, now time.Time) time.Duration {
	c := apimeta.FindStatusCondition(st.Conditions, ringcapv1.ConditionScheduled)
	if c == nil {
		return refusalRetryMin
	}
	return min(max(now.Sub(c.LastTransitionTime.Time), refusalRetryMin), refusalRetryMax)
}

// asRefusal returns err's refusal message, "" when err is not a refusal.
func asRefusal(err error) string {
	var pr *podRefusal
	if errors.As(err, &pr) {
		return pr.msg
	}
	return ""
}
