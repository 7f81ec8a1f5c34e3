package controller

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

// Observed is everything ComputeStatus looks at.
type Observed struct {
	// Pod is the capture pod, nil when there is none.
	Pod *corev1.Pod
	// Receiver is the receiver's latest /status (or its final summary), nil when unknown.
	Receiver *statusdoc.Status
	// ReceiverError says why /status could not be read ("" when it was, or not tried).
	ReceiverError string
	// PodProblem says why there is no pod (for example its name is taken), "" if none.
	PodProblem string
	// ProblemReason is the Scheduled condition's reason for PodProblem
	// (PodNameConflict when "").
	ProblemReason string
	// Claim is what was read about a pending pod's device claim.
	Claim ClaimObservation
	// ReceiverReadAt is when the receiver's /status last answered (zero: never).
	ReceiverReadAt metav1.Time
	// StaleAfter is how long /status may fail before the receiver counts as
	// unreachable, whatever its last answer said (0: never).
	StaleAfter time.Duration
	// Now is the time of the observation.
	Now metav1.Time
}

// verdict is the outcome of looking at the pod and the receiver, before it is written
// into conditions.
type verdict struct {
	phase                     ringcapv1.RingCapturePhase
	scheduled                 metav1.ConditionStatus
	scheduledReason, schedMsg string
	// failed, failReason and failMsg are the failure verdict, written by
	// applyFailure alone (failure.go) from the failures the judge functions find.
	failed                      bool
	failReason, failMsg         string
	ended                       bool // the receiver is gone (pod terminal or receiver exited)
	notReadyReason, notReadyMsg string
}

// ComputeStatus returns the RingCapture's status for what was observed. It is a pure
// function of its inputs; conditions keep their lastTransitionTime when their status
// does not change. The status describes the run of the observed pod (status.running is
// read from the pod, not from spec); a pod of another generation than status.running
// starts a new run, and the finished one moves to status.lastRun. A run that loses its
// pod after it accepted data is interrupted: recorded in status.lastRun and restarted,
// or failed, as spec.interruptionPolicy says.
func ComputeStatus(rc *ringcapv1.RingCapture, in Observed) ringcapv1.RingCaptureStatus {
	old := rc.Status
	if isNewRun(old, in.Pod) {
		old = newRunStatus(old)
	}
	lost := podLost(old, in.Pod)
	if lost && interruptionPolicy(rc) == ringcapv1.InterruptionRestart {
		old, lost = restartedRun(old, in.Pod, in.Now), false
		in.Pod = replacing(in.Pod, in.Now)
	}
	st := *old.DeepCopy()
	st.ObservedGeneration = rc.Generation

	// A finished run keeps its verdict while its pod is stopped and after it is gone
	// (and is not run again until the spec changes).
	if isTerminal(old.Phase) {
		return endedRun(rc, st, in)
	}

	v, rs, fails := judgeRun(in)
	if lost {
		v.ended = true
		fails = append(fails, interruptedFailure(old, in.Pod))
	}
	fails = addFailure(fails, startDeadlineFailure(rc, v, rs, in))
	st.EmptyReaderSlots = EmptyReaderSlots(in.Pod, rs, in.ReceiverReadAt)
	if !v.ended {
		fails = addFailure(fails, readerExitedFailure(rc, st.EmptyReaderSlots)) // readers.go
	}
	applyFailure(&v, fails) // failure.go: one verdict, by priority
	judgeReachability(&v, in)
	judgeReaderSlots(rc, st.EmptyReaderSlots, &v)
	applyRun(&st, v, rs, in)
	st.Endpoint = endpoint(in.Pod, rs, st.Endpoint)

	receiving := !v.ended && !v.failed && rs != nil && rs.State == statusdoc.StateReceiving
	listening := !v.ended && !v.failed && rs != nil && rs.State == statusdoc.StateListening
	if v.phase == ringcapv1.PhaseScheduled {
		v.phase = runningPhase(v, rs, receiving, listening)
	}
	if v.ended || !receiving {
		st.RateBytesPerSecond = idleRate(rs)
	}
	st.Received = HumanBytes(st.BytesReceived)
	st.Rate = HumanRate(st.RateBytesPerSecond)
	st.Phase = v.phase

	setConditions(&st, rc.Generation, in.Now, conditions(rc, v, rs, in, st, receiving || listening)...)
	return st
}

// judgeRun is the verdict on the pod and the receiver, the receiver's latest status
// (its final summary once it exited; nil when unknown) and the failures they show,
// for applyFailure to decide between.
func judgeRun(in Observed) (verdict, *statusdoc.Status, []failure) {
	v, fails := judge(in.Pod)
	explainHostPorts(&v, in.Pod)
	explainClaim(&v, in.Pod, in.Claim)
	if in.Pod == nil && in.PodProblem != "" {
		v.scheduledReason, v.schedMsg = ringcapv1.ReasonPodNameConflict, in.PodProblem
		if in.ProblemReason != "" {
			v.scheduledReason = in.ProblemReason
		}
	}
	rs := in.Receiver
	switch {
	case in.Pod != nil && in.Pod.DeletionTimestamp != nil:
		rs = nil // a pod on its way out: its run is over, and recorded as such
	case rs == nil:
		rs = terminationSummary(in.Pod) // the receiver's final numbers, once it exited
	}
	if rs != nil && rs.State == statusdoc.StateFailed {
		fails = append(fails, failure{causeReceiverReported, "receiver failed: " + rs.Message})
	}
	return v, rs, fails
}

// applyRun writes where the run is and what it has done: pod, node, running
// configuration, the receiver's numbers, start and completion times.
func applyRun(st *ringcapv1.RingCaptureStatus, v verdict, rs *statusdoc.Status, in Observed) {
	if in.Pod != nil {
		st.Pod = in.Pod.Name
		st.Node = in.Pod.Spec.NodeName
		if in.Pod.DeletionTimestamp == nil {
			st.Running = RunningConfig(in.Pod, rs)
		}
	} else {
		st.Pod, st.Node = "", ""
	}
	if rs != nil {
		applyReceiverNumbers(st, rs)
	}
	if (v.ended || v.failed) && st.CompletionTime == nil {
		st.CompletionTime = completionTime(in.Pod, rs, in.Now)
	}
	if in.Pod != nil && st.StartTime == nil && in.Pod.Status.StartTime != nil {
		t := *in.Pod.Status.StartTime
		st.StartTime = &t
	}
}

// runningPhase refines Scheduled by what the receiver says.
func runningPhase(v verdict, rs *statusdoc.Status, receiving, listening bool) ringcapv1.RingCapturePhase {
	switch {
	case receiving:
		return ringcapv1.PhaseReceiving
	case listening:
		return ringcapv1.PhaseListening // ready for a sender (the first, or the next)
	case v.ended || (rs != nil && rs.State == statusdoc.StateFinished):
		return ringcapv1.PhaseReceiving // the receiver finished: the readers drain the ring
	}
	return ringcapv1.PhaseScheduled
}

// endedRun keeps a finished run's verdict (phase and conditions) while its pod is
// stopped and after it is gone; the pod's place, the receiver's final counts and the
// pending change are kept current.
func endedRun(rc *ringcapv1.RingCapture, st ringcapv1.RingCaptureStatus, in Observed) ringcapv1.RingCaptureStatus {
	if in.Pod == nil || in.Pod.DeletionTimestamp != nil {
		st.Pod = ""
	} else {
		st.Pod, st.Node = in.Pod.Name, in.Pod.Spec.NodeName
		if rs := terminationSummary(in.Pod); rs != nil && apiInt64(rs.BytesReceived) >= st.BytesReceived {
			st.BytesReceived, st.BlocksFilled, st.Observations = apiInt64(rs.BytesReceived), apiInt64(rs.BlocksFilled), int64(rs.Observations)
			st.Received = HumanBytes(st.BytesReceived)
			if p := PacketsStatus(rs.Packets); p != nil {
				st.Packets = p // the receiver's final counts
			}
		}
	}
	setConditionGenerations(&st, rc.Generation)
	setConditions(&st, rc.Generation, in.Now, changePendingCondition(rc, st))
	return st
}

// conditions returns the run's conditions, one pure function each, in the order they are
// listed in the status. listening is whether the receiver listens or receives.
func conditions(rc *ringcapv1.RingCapture, v verdict, rs *statusdoc.Status, in Observed, st ringcapv1.RingCaptureStatus, listening bool) []metav1.Condition {
	ring := ringReadyCondition(v, rs, in)
	receiver := receiverReadyCondition(v, rs, in, st.Endpoint, listening)
	ready := ring.Status == metav1.ConditionTrue && receiver.Status == metav1.ConditionTrue
	return []metav1.Condition{
		scheduledCondition(v), ring, receiver,
		receivingCondition(v, rs, st),
		readersBehindCondition(v, rs, in.Now),
		failedCondition(v),
		readyCondition(v, ready, st.Endpoint),
		changePendingCondition(rc, st),
		externallyReachableCondition(in.Pod, st.Endpoint),
	}
}

// setConditions writes conds into st, stamped with the generation and, for a condition
// whose status changes, the time.
func setConditions(st *ringcapv1.RingCaptureStatus, gen int64, now metav1.Time, conds ...metav1.Condition) {
	for _, c := range conds {
		c.Message, c.ObservedGeneration, c.LastTransitionTime = truncate(c.Message, 1024), gen, now
		apimeta.SetStatusCondition(&st.Conditions, c)
	}
}

func condition(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg}
}

func scheduledCondition(v verdict) metav1.Condition {
	return condition(ringcapv1.ConditionScheduled, v.scheduled, v.scheduledReason, v.schedMsg)
}

func ringReadyCondition(v verdict, rs *statusdoc.Status, in Observed) metav1.Condition {
	const t, f = ringcapv1.ConditionRingReady, metav1.ConditionFalse
	switch {
	case !v.ended && !v.failed && rs != nil && rs.Ring.Ready:
		return condition(t, metav1.ConditionTrue, ringcapv1.ReasonRingCreated,
			fmt.Sprintf("ring %s: %d blocks of %d bytes, %d readers", rs.Ring.Key, rs.Ring.Blocks, rs.Ring.BlockBytes, rs.Ring.Readers)+externalReadersNote(in.Pod, rs.Ring.Readers))
	case v.failed:
		return condition(t, f, ringcapv1.ReasonCaptureFailed, "the capture failed: its pod is stopped and the ring released")
	case v.ended:
		return condition(t, f, ringcapv1.ReasonCaptureEnded, "the receiver exited and its ring went with it")
	case rs == nil:
		return condition(t, f, ringcapv1.ReasonNoReceiverStatus, receiverUnknown(in))
	}
	return condition(t, f, ringcapv1.ReasonRingNotReady, "receiver is "+rs.State)
}

// receiverReadyCondition: listening is whether the receiver listens or receives (and the
// run has neither ended nor failed).
func receiverReadyCondition(v verdict, rs *statusdoc.Status, in Observed, ep *ringcapv1.EndpointStatus, listening bool) metav1.Condition {
	const t, f = ringcapv1.ConditionReceiverReady, metav1.ConditionFalse
	switch {
	case listening && receiverStale(in):
		return condition(t, metav1.ConditionUnknown, ringcapv1.ReasonReceiverUnreachable, staleMessage(in))
	case listening:
		return condition(t, metav1.ConditionTrue, rs.State, endpointMessage(ep)+staleSuffix(in))
	case v.failed:
		return condition(t, f, ringcapv1.ReasonCaptureFailed, "the capture failed: its pod is stopped")
	case v.ended:
		return condition(t, f, ringcapv1.ReasonCaptureEnded, "the receiver exited")
	case rs == nil:
		return condition(t, f, ringcapv1.ReasonNoReceiverStatus, receiverUnknown(in))
	}
	return condition(t, f, ringcapv1.ReasonReceiverNotReady, "receiver is "+rs.State+msgSuffix(rs.Message))
}

func receivingCondition(v verdict, rs *statusdoc.Status, st ringcapv1.RingCaptureStatus) metav1.Condition {
	const t, f = ringcapv1.ConditionReceiving, metav1.ConditionFalse
	switch {
	case v.failed:
		return condition(t, f, ringcapv1.ReasonFailed, "the capture failed")
	case v.ended:
		return condition(t, f, ringcapv1.ReasonReceiverFinished, fmt.Sprintf("received %s", HumanBytes(st.BytesReceived)))
	case rs != nil && rs.State == statusdoc.StateReceiving:
		return condition(t, metav1.ConditionTrue, ringcapv1.ReasonReceiving, "receiving at "+HumanRate(st.RateBytesPerSecond))
	case rs != nil && rs.State == statusdoc.StateFinished:
		return condition(t, f, ringcapv1.ReasonReceiverFinished, "the receiver met its stop condition")
	}
	return condition(t, f, ringcapv1.ReasonNotReceiving, "no data is arriving")
}

// readersBehindCondition reports a hold by the readers while it lasts: the receiver's
// heldBackSince is when the current hold began ("" when it is not held back).
func readersBehindCondition(v verdict, rs *statusdoc.Status, now metav1.Time) metav1.Condition {
	since, ok := heldBackSince(rs)
	if !ok || v.ended || v.failed {
		return condition(ringcapv1.ConditionReadersBehind, metav1.ConditionFalse, ringcapv1.ReasonReadersKeepingUp, "the receiver is not waiting for the readers")
	}
	d := max(now.Sub(since), 0)
	return condition(ringcapv1.ConditionReadersBehind, metav1.ConditionTrue, ringcapv1.ReasonReadersBehind, fmt.Sprintf(
		"ring %s: no free block for the receiver for %s (since %s): the readers have not released the ring's blocks; held back %s in total",
		rs.Ring.Key, d.Round(time.Second), since.UTC().Format(time.RFC3339), (time.Duration(rs.HeldBackSeconds*float64(time.Second))).Round(time.Second)))
}

func heldBackSince(rs *statusdoc.Status) (time.Time, bool) {
	if rs == nil || rs.HeldBackSince == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, rs.HeldBackSince)
	return t, err == nil
}

func failedCondition(v verdict) metav1.Condition {
	if v.failed {
		return condition(ringcapv1.ConditionFailed, metav1.ConditionTrue, v.failReason, v.failMsg)
	}
	return condition(ringcapv1.ConditionFailed, metav1.ConditionFalse, ringcapv1.ReasonNotFailed, "")
}

// readyCondition is the aggregate: ready is whether RingReady and ReceiverReady are True.
func readyCondition(v verdict, ready bool, ep *ringcapv1.EndpointStatus) metav1.Condition {
	const t, f = ringcapv1.ConditionReady, metav1.ConditionFalse
	switch {
	case v.failed:
		return condition(t, f, ringcapv1.ReasonFailed, v.failMsg)
	case v.phase == ringcapv1.PhaseSucceeded:
		return condition(t, f, ringcapv1.ReasonSucceeded, "the capture finished")
	case v.scheduled != metav1.ConditionTrue:
		return condition(t, f, v.scheduledReason, v.schedMsg)
	case v.notReadyReason != "":
		return condition(t, f, v.notReadyReason, v.notReadyMsg)
	case ready:
		return condition(t, metav1.ConditionTrue, ringcapv1.ReasonReceiverReady, endpointMessage(ep))
	case v.ended:
		return condition(t, f, ringcapv1.ReasonReadersDraining, "the receiver finished; waiting for the readers to exit")
	}
	return condition(t, f, ringcapv1.ReasonReceiverNotReady, "the receiver is not listening yet")
}

func changePendingCondition(rc *ringcapv1.RingCapture, st ringcapv1.RingCaptureStatus) metav1.Condition {
	const t = ringcapv1.ConditionChangePending
	msg := pendingChange(rc, st.Running)
	switch {
	case msg != "" && isTerminal(st.Phase):
		return condition(t, metav1.ConditionTrue, ringcapv1.ReasonSpecChangePending,
			fmt.Sprintf("spec generation %d is applied in a new pod (the run of generation %d ended)", rc.Generation, st.Running.Generation))
	case msg != "":
		return condition(t, metav1.ConditionTrue, ringcapv1.ReasonSpecChangePending, msg)
	case st.Running == nil:
		return condition(t, metav1.ConditionFalse, ringcapv1.ReasonNoChangePending, "no capture pod has run yet")
	}
	return condition(t, metav1.ConditionFalse, ringcapv1.ReasonNoChangePending, "the capture pod runs the current spec")
}

// judge looks at the pod alone: phase, scheduling, and the failures it shows.
func judge(pod *corev1.Pod) (verdict, []failure) {
	v, scheduled := judgeScheduling(pod)
	if !scheduled {
		return v, nil
	}
	var fails []failure
	fails = addFailure(fails, judgeReceiver(pod, &v))
	fails = addFailure(fails, judgeContainers(pod, &v))
	fails = addFailure(fails, judgePodPhase(pod, &v))
	return v, fails
}

// judgeScheduling says whether the pod exists and is on a node, and why not.
func judgeScheduling(pod *corev1.Pod) (verdict, bool) {
	v := verdict{phase: ringcapv1.PhasePending, scheduled: metav1.ConditionFalse}
	switch {
	case pod == nil:
		v.scheduledReason, v.schedMsg = ringcapv1.ReasonPodNotCreated, "the capture pod does not exist yet"
		return v, false
	case pod.DeletionTimestamp != nil:
		v.scheduledReason, v.schedMsg = ringcapv1.ReasonPodDeleting, "the previous capture pod is being deleted"
		return v, false
	case pod.Spec.NodeName == "":
		v.scheduledReason, v.schedMsg = ringcapv1.ReasonPodPending, "waiting for the scheduler"
		if c := podCondition(pod, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			v.scheduledReason, v.schedMsg = ringcapv1.ReasonUnschedulable, "no node can run the capture pod: "+c.Message
		}
		return v, false
	}
	v.phase = ringcapv1.PhaseScheduled
	v.scheduled, v.scheduledReason, v.schedMsg = metav1.ConditionTrue, ringcapv1.ReasonScheduled, "on node "+pod.Spec.NodeName
	if claim, _ := podDeviceClaim(pod); claim != "" {
		v.schedMsg += ", its RDMA device through ResourceClaim " + claim
	}
	return v, true
}

// judgeReceiver notes the receiver container's end: a non-zero exit is a failure,
// with the receiver's own summary (or the end of its log).
func judgeReceiver(pod *corev1.Pod, v *verdict) *failure {
	t := receiverTerminated(pod)
	if t == nil {
		return nil
	}
	v.ended = true
	if t.ExitCode == 0 {
		return nil
	}
	msg := fmt.Sprintf("receiver exited with code %d (%s)", t.ExitCode, t.Reason)
	if s := terminationSummary(pod); s != nil && s.Message != "" {
		msg += ": " + s.Message
	} else if t.Message != "" {
		msg += ": " + containerMessage(t.Message)
	}
	return &failure{causeReceiverExited, msg}
}

// judgeContainers notes containers waiting for a reason (the receiver's
// first); it returns the failure of the first reader that exited non-zero.
func judgeContainers(pod *corev1.Pod, v *verdict) (failed *failure) {
	for _, cs := range pod.Status.ContainerStatuses {
		w := cs.State.Waiting
		waiting := w != nil && w.Reason != "" && w.Reason != "ContainerCreating"
		if cs.Name == ringcapv1.ReceiverContainerName {
			if waiting {
				v.notReadyReason, v.notReadyMsg = ringcapv1.ReasonContainerWaiting, fmt.Sprintf("receiver container (image %s): %s: %s", containerImage(pod, cs), w.Reason, w.Message)
			}
			continue
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 && failed == nil {
			failed = &failure{causeReaderFailed, fmt.Sprintf("reader %s exited with code %d (%s)%s", cs.Name, t.ExitCode, t.Reason, msgSuffix(containerMessage(t.Message)))}
		}
		if waiting && v.notReadyReason == "" {
			v.notReadyReason, v.notReadyMsg = ringcapv1.ReasonContainerWaiting, fmt.Sprintf("reader %s (image %s): %s: %s", cs.Name, containerImage(pod, cs), w.Reason, w.Message)
		}
	}
	return failed
}

// judgePodPhase notes a pod that ended: Succeeded (unless a failure decides
// otherwise), or the failure of a Failed pod.
func judgePodPhase(pod *corev1.Pod, v *verdict) *failure {
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		v.ended, v.phase = true, ringcapv1.PhaseSucceeded
	case corev1.PodFailed:
		v.ended = true
		return &failure{causePodFailed, strings.TrimSpace("the capture pod failed: " + pod.Status.Reason + " " + pod.Status.Message)}
	}
	return nil
}

// ObservationHeader is the status view of the receiver's header keywords (nil without any).
func ObservationHeader(h map[string]string) *ringcapv1.ObservationHeaderStatus {
	if len(h) == 0 {
		return nil
	}
	o := &ringcapv1.ObservationHeaderStatus{Source: h["SOURCE"], UTCStart: h["UTC_START"], UTCStartSource: h["RINGCAP_UTC_START_SOURCE"],
		Telescope: h["TELESCOPE"], Freq: h["FREQ"], BW: h["BW"]}
	if n, err := strconv.ParseInt(h["RINGCAP_OBSERVATION"], 10, 64); err == nil {
		o.Number = &n
	}
	return o
}

func applyReceiverNumbers(st *ringcapv1.RingCaptureStatus, rs *statusdoc.Status) {
	st.HeldBackSeconds = int64(rs.HeldBackSeconds)
	if o := ObservationHeader(rs.Header); o != nil {
		st.Observation = o
	}
	st.BytesReceived = apiInt64(rs.BytesReceived)
	st.BlocksFilled = apiInt64(rs.BlocksFilled)
	st.Observations = int64(rs.Observations)
	st.RateBytesPerSecond = int64(rs.RateBytesPerSecond)
	st.Ring = RingFill(rs.RingFill)
	if p := PacketsStatus(rs.Packets); p != nil { // packet.go
		st.Packets = p
	}
	if rs.MemoryRegistration.Mode != "" {
		st.MemoryRegistration = &ringcapv1.MemoryRegistrationStatus{
			Mode: rs.MemoryRegistration.Mode, Regions: apiInt32(rs.MemoryRegistration.Regions),
			Bytes: apiInt64(rs.MemoryRegistration.Bytes), Reason: rs.MemoryRegistration.Reason,
		}
	}
	if t, err := time.Parse(time.RFC3339, rs.StartTime); err == nil {
		mt := metav1.NewTime(t)
		st.StartTime = &mt
	}
	if t, err := time.Parse(time.RFC3339, rs.CompletionTime); err == nil {
		mt := metav1.NewTime(t)
		st.CompletionTime = &mt
	}
}

func completionTime(pod *corev1.Pod, rs *statusdoc.Status, now metav1.Time) *metav1.Time {
	if rs != nil {
		if t, err := time.Parse(time.RFC3339, rs.CompletionTime); err == nil {
			mt := metav1.NewTime(t)
			return &mt
		}
	}
	if t := receiverTerminated(pod); t != nil && !t.FinishedAt.IsZero() {
		ft := t.FinishedAt
		return &ft
	}
	return &now
}

func endpointMessage(ep *ringcapv1.EndpointStatus) string {
	if ep == nil {
		return "listening"
	}
	if len(ep.UDPPorts) > 0 {
		return "senders send to " + packetDestination(ep)
	}
	msg := fmt.Sprintf("senders connect to %s:%d", ep.Address, ep.Port)
	if ep.Device != "" {
		msg += fmt.Sprintf(" (device %s port %d", ep.Device, ep.IBPort)
		if ep.GIDIndex != nil {
			msg += fmt.Sprintf(", GID index %d %s", *ep.GIDIndex, ep.GID)
		}
		msg += ")"
	}
	return msg
}

// staleSuffix says, when the latest /status read failed, that the numbers shown are
// those of the last read that worked: a status that stopped moving says why.
func staleSuffix(in Observed) string {
	if in.ReceiverError == "" {
		return ""
	}
	return "; the numbers are from the last good status read, the latest failed: " + in.ReceiverError
}

func receiverUnknown(in Observed) string {
	if in.ReceiverError != "" {
		return "receiver status not available: " + in.ReceiverError
	}
	return "the receiver has not reported yet"
}

func receiverTerminated(pod *corev1.Pod) *corev1.ContainerStateTerminated {
	if pod == nil {
		return nil
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == ringcapv1.ReceiverContainerName {
			return cs.State.Terminated
		}
	}
	return nil
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func isTerminal(p ringcapv1.RingCapturePhase) bool {
	return p == ringcapv1.PhaseSucceeded || p == ringcapv1.PhaseFailed
}

func setConditionGenerations(st *ringcapv1.RingCaptureStatus, gen int64) {
	for i := range st.Conditions {
		st.Conditions[i].ObservedGeneration = gen
	}
}

// containerMessage is a container's termination message fit for a condition: with
// terminationMessagePolicy FallbackToLogsOnError it may be the last lines of the
// container's log, and the error is at their end, so the end is kept.
func containerMessage(m string) string {
	const keep = 800
	m = strings.TrimSpace(m)
	if len(m) <= keep {
		return m
	}
	m = m[len(m)-keep:]
	if i := strings.IndexByte(m, '\n'); i >= 0 && i < len(m)-1 {
		m = m[i+1:]
	}
	return "..." + m
}

// containerImage is the image a container runs or waits for: the pod spec's (the
// status may carry a resolved name, or none before the pull).
func containerImage(pod *corev1.Pod, cs corev1.ContainerStatus) string {
	for _, c := range pod.Spec.Containers {
		if c.Name == cs.Name {
			return c.Image
		}
	}
	return cs.Image
}

// containerPort returns the port of the named container port of the capture pod.
func containerPort(pod *corev1.Pod, name string) int32 {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == name {
				return p.ContainerPort
			}
		}
	}
	return 0
}

func msgSuffix(m string) string {
	if m == "" {
		return ""
	}
	return ": " + m
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// HumanBytes formats a byte count with binary units, for example "1.50 GiB".
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.2f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// idleRate is the rate shown while no data arrives: the average of the
// receiver's last observation (0 before the first), so that a finished
// capture still says how fast it went.
func idleRate(rs *statusdoc.Status) int64 {
	if rs == nil || rs.LastObservation == nil || rs.LastObservation.Seconds <= 0 {
		return 0
	}
	return int64(float64(rs.LastObservation.Bytes) / rs.LastObservation.Seconds)
}

// HumanRate formats bytes per second as bits per second, for example "9.60 Gbit/s".
func HumanRate(bytesPerSecond int64) string {
	bits := float64(bytesPerSecond) * 8
	units := []string{"bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"}
	i := 0
	for bits >= 1000 && i < len(units)-1 {
		bits /= 1000
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f %s", bits, units[i])
	}
	return fmt.Sprintf("%.2f %s", bits, units[i])
}
