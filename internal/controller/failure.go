package controller

import ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"

// failCause is why a run fails. Its value is its priority: the lower, the
// higher (see failReasons).
type failCause int

// The causes that fail a run, highest priority first.
const (
	// causeInterrupted: the run lost its pod after it accepted data and
	// spec.interruptionPolicy is Fail. First: the pod every other cause
	// describes is gone or going.
	causeInterrupted failCause = iota
	// causeReceiverExited: the receiver container exited non-zero; its
	// message carries the receiver's own summary.
	causeReceiverExited
	// causeReaderFailed: a reader container exited non-zero.
	causeReaderFailed
	// causePodFailed: the pod's phase is Failed, Kubernetes' word for it: less
	// specific than a container's exit.
	causePodFailed
	// causeReceiverReported: the receiver's /status (or its final summary)
	// says Failed while its container has not exited non-zero.
	causeReceiverReported
	// causeStartDeadline: the receiver did not listen within
	// spec.startDeadlineSeconds: a timeout, often the symptom of another cause.
	causeStartDeadline
	// causeReaderExited: a FailCapture reader left its ring slot while the
	// capture runs.
	causeReaderExited
)

// failReasons is the failure verdict's priority table, highest first: when
// several causes hold at once, the run's Failed condition (and phase) shows
// the first of them, whatever order they were found in. Each row is a cause
// and the Failed condition's reason for it.
var failReasons = [...]string{
	causeInterrupted:      ringcapv1.ReasonRunInterrupted,
	causeReceiverExited:   ringcapv1.ReasonReceiverFailed,
	causeReaderFailed:     ringcapv1.ReasonReaderFailed,
	causePodFailed:        ringcapv1.ReasonPodFailed,
	causeReceiverReported: ringcapv1.ReasonReceiverFailed,
	causeStartDeadline:    ringcapv1.ReasonStartDeadlineExceeded,
	causeReaderExited:     ringcapv1.ReasonReaderExited,
}

// failure is one cause that would fail the run, with the message to show.
type failure struct {
	cause failCause
	msg   string
}

// reason is the Failed condition's reason for f.
func (f failure) reason() string { return failReasons[f.cause] }

// addFailure appends f to fails when there is one (f non-nil).
func addFailure(fails []failure, f *failure) []failure {
	if f == nil {
		return fails
	}
	return append(fails, *f)
}

// decideFailure is the run's failure verdict: of the candidate failures, the
// one of the highest priority (failReasons); of two with the same cause, the
// first. ok is false when there is none.
func decideFailure(fails []failure) (f failure, ok bool) {
	for _, c := range fails {
		if !ok || c.cause < f.cause {
			f, ok = c, true
		}
	}
	return f, ok
}

// applyFailure writes the verdict of decideFailure into v: a failed run's
// phase is Failed.
func applyFailure(v *verdict, fails []failure) {
	f, ok := decideFailure(fails)
	if !ok {
		return
	}
	v.failed, v.failReason, v.failMsg, v.phase = true, f.reason(), f.msg, ringcapv1.PhaseFailed
}
