package controller

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

// Readers that leave a running capture. A reader that exits while the receiver still
// listens or receives leaves its ring slot empty, and the receiver is held back at the
// next full ring for good: the status says which reader, its exit code and when, and
// spec.readers[].restartPolicy says what happens next (FailCapture: the capture fails;
// Restart: the reader is a restartable sidecar that the kubelet restarts, and Ready is
// False until it runs again).

// readerExitGrace is how long a reader must have been gone, with the receiver still
// listening or receiving, before its exit counts as an empty slot: longer than the
// receiver's status poll (4 s), so that a reader that exits because the capture
// finished is not taken for one that left it running.
const readerExitGrace = 10 * time.Second

// readerPolicy is the restart policy of the reader named name (FailCapture by default).
func readerPolicy(rc *ringcapv1.RingCapture, name string) ringcapv1.ReaderRestartPolicy {
	for _, rd := range rc.Spec.Readers {
		if rd.Name == name && rd.RestartPolicy != "" {
			return rd.RestartPolicy
		}
	}
	return ringcapv1.ReaderFailCapture
}

// splitReaders puts the reader containers whose reader has restartPolicy Restart into
// restartable init containers (native sidecars: the kubelet restarts them whatever their
// exit code, and stops them once the receiver has exited); the others stay containers.
// cs are the containers of readers, in the same order.
func splitReaders(cs []corev1.Container, readers []ringcapv1.ReaderContainer) (regular, sidecars []corev1.Container) {
	for i, c := range cs {
		if readers[i].RestartPolicy == ringcapv1.ReaderRestart {
			c.RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
			sidecars = append(sidecars, c)
			continue
		}
		regular = append(regular, c)
	}
	return regular, sidecars
}

// sidecarReaders counts the pod's restartable init containers (readers with Restart).
func sidecarReaders(pod *corev1.Pod) int {
	n := 0
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			n++
		}
	}
	return n
}

// readerStatuses are the statuses of the pod's reader containers: its containers other
// than the receiver, and its restartable init containers.
func readerStatuses(pod *corev1.Pod) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != ringcapv1.ReceiverContainerName {
			out = append(out, cs)
		}
	}
	sidecar := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		sidecar[c.Name] = c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
	}
	for _, cs := range pod.Status.InitContainerStatuses {
		if sidecar[cs.Name] {
			out = append(out, cs)
		}
	}
	return out
}

// lastExit is the exit of a reader container that is not running: its termination, or,
// while it waits to be restarted, its last one. nil while it runs or has never run.
func lastExit(cs corev1.ContainerStatus) *corev1.ContainerStateTerminated {
	switch {
	case cs.State.Running != nil:
		return nil
	case cs.State.Terminated != nil:
		return cs.State.Terminated
	case cs.State.Waiting != nil:
		return cs.LastTerminationState.Terminated
	}
	return nil
}

// EmptyReaderSlots returns the readers that exited while the capture runs: the receiver
// (not exited) said it listens or receives in a /status read at readAt, readerExitGrace
// or more after the reader exited. A reader that exits as the capture finishes (the
// receiver met its stop condition and the readers drain the ring) is not listed, nor is
// one whose exit no read since has judged: the last good read may be from before it,
// when the receiver still received (its reads fail under load, or as it shuts down).
func EmptyReaderSlots(pod *corev1.Pod, rs *statusdoc.Status, readAt metav1.Time) []ringcapv1.EmptyReaderSlot {
	if pod == nil || rs == nil || receiverTerminated(pod) != nil ||
		(rs.State != statusdoc.StateListening && rs.State != statusdoc.StateReceiving) {
		return nil
	}
	var out []ringcapv1.EmptyReaderSlot
	for _, cs := range readerStatuses(pod) {
		t := lastExit(cs)
		if t == nil || readAt.Sub(t.FinishedAt.Time) < readerExitGrace {
			continue
		}
		finished := t.FinishedAt
		out = append(out, ringcapv1.EmptyReaderSlot{Reader: cs.Name, ExitCode: t.ExitCode, FinishedAt: &finished, Restarts: cs.RestartCount})
	}
	return out
}

// readerExitedFailure is the failure of a run whose FailCapture reader left its ring
// slot (the first such slot; nil when none). A reader that exited non-zero is already
// a failure of its own (see judgeContainers).
func readerExitedFailure(rc *ringcapv1.RingCapture, slots []ringcapv1.EmptyReaderSlot) *failure {
	for _, s := range slots {
		if readerPolicy(rc, s.Reader) == ringcapv1.ReaderRestart {
			continue
		}
		return &failure{causeReaderExited, fmt.Sprintf("reader %s exited with code %d at %s while the capture runs: its ring slot is empty and would hold the receiver back for good (restartPolicy FailCapture; Restart restarts it)", s.Reader, s.ExitCode, exitedAt(s))}
	}
	return nil
}

// judgeReaderSlots notes a Restart reader's empty slot: it keeps Ready False until the
// reader runs again (unless a reachability problem says more).
func judgeReaderSlots(rc *ringcapv1.RingCapture, slots []ringcapv1.EmptyReaderSlot, v *verdict) {
	if v.failed || v.ended {
		return
	}
	for _, s := range slots {
		if readerPolicy(rc, s.Reader) != ringcapv1.ReaderRestart {
			continue
		}
		if v.notReadyReason == "" || v.notReadyReason == ringcapv1.ReasonContainerWaiting {
			v.notReadyReason = ringcapv1.ReasonReaderSlotEmpty
			v.notReadyMsg = fmt.Sprintf("reader %s exited with code %d at %s and waits to be restarted (%d restarts so far): its ring slot is empty and holds the receiver back", s.Reader, s.ExitCode, exitedAt(s), s.Restarts)
		}
	}
}

// exitedAt is when the reader of an empty slot exited, for messages.
func exitedAt(s ringcapv1.EmptyReaderSlot) string {
	if s.FinishedAt == nil {
		return "an unknown time"
	}
	return s.FinishedAt.UTC().Format(time.RFC3339)
}
