package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

// conflictRetry is how soon a reconcile whose status write met a newer RingCapture runs again.
const conflictRetry = 100 * time.Millisecond

// conflictRecheck is how often a RingCapture whose pod name is taken looks again.
const conflictRecheck = 30 * time.Second

// StatusFetcher reads a running receiver's /status.
type StatusFetcher interface {
	Fetch(ctx context.Context, pod *corev1.Pod, metricsPort int32) (*statusdoc.Status, error)
}

// RingCaptureReconciler runs one capture pod per RingCapture and keeps its status.
type RingCaptureReconciler struct {
	client.Client
	// APIReader reads around the cache (used once, when a create races the cache).
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
	Pods      PodOptions
	Fetcher   StatusFetcher
	// PollInterval is how often a running receiver's /status is read
	// (statusPollInterval when zero).
	PollInterval time.Duration
	// Now returns the current time (time.Now when nil).
	Now func() time.Time

	mu    sync.Mutex
	polls map[types.NamespacedName]poll
}

// poll is the last /status read of one capture.
type poll struct {
	podUID types.UID
	at     time.Time
	okAt   time.Time // the last read that worked (zero: none yet)
	status *statusdoc.Status
	err    string
}

// CacheOptions returns the manager's cache settings: RingCaptures in namespaces (every
// namespace when there are none), and only the pods the operator made, so that the
// operator does not hold every pod of the cluster in memory. With namespaces the
// operator lists and watches nothing outside them, so it needs no cluster-wide
// permission (the chart's operator.watchNamespaces).
func CacheOptions(namespaces []string) cache.Options {
	opts := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}: {Label: labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedByValue})},
	}}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}

// ParseNamespaces parses the operator's --namespace: namespace names separated by
// commas ("" for every namespace). Each must be a namespace name (a DNS label).
func ParseNamespaces(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for i, ns := range strings.Split(s, ",") {
		ns = strings.TrimSpace(ns)
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, fmt.Errorf("namespace %d %q: %s", i+1, ns, strings.Join(errs, "; "))
		}
		if !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	return out, nil
}

// SetupWithManager registers the controller: it watches RingCaptures and the pods they own.
func (r *RingCaptureReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&ringcapv1.RingCapture{}).
		Owns(&corev1.Pod{}).
		WithOptions(opts).
		Complete(r)
}

// Reconcile makes the capture pod exist (once per spec generation) and writes the
// status observed from the pod and the receiver.
func (r *RingCaptureReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	reconcilesTotal.Inc()
	rc := &ringcapv1.RingCapture{}
	if err := r.Get(ctx, req.NamespacedName, rc); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get RingCapture %s: %w", req.NamespacedName, err)
	}
	if !rc.DeletionTimestamp.IsZero() {
		// The pod carries a controller reference: the garbage collector deletes it.
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}

	pod, err := r.reconcilePod(ctx, rc)
	podProblem, problemReason := "", ""
	var cp *claimProblem
	var hp *headerProblem // header_check.go
	switch {
	case errors.Is(err, ErrPodConflict):
		podProblem = err.Error() // shown in the status, checked again after conflictRecheck
		r.Recorder.Eventf(rc, nil, corev1.EventTypeWarning, ringcapv1.ReasonPodNameConflict, "CreatePod",
			"Pod %s exists and is not controlled by this RingCapture", PodName(rc.Name))
	case errors.As(err, &cp):
		podProblem, problemReason = cp.msg, cp.reason
		r.Recorder.Eventf(rc, nil, corev1.EventTypeWarning, cp.reason, "CreateClaimTemplate", "%s", cp.msg)
	case errors.As(err, &hp):
		podProblem, problemReason = hp.msg, hp.reason
	case asRefusal(err) != "":
		podProblem, problemReason = asRefusal(err), ringcapv1.ReasonPodRefused // PodCreateFailed was recorded
	case err != nil:
		return ctrl.Result{}, err
	}
	claim, err := r.observeClaim(ctx, pod)
	if err != nil {
		return ctrl.Result{}, err
	}
	recv, recvErr := r.receiverStatus(ctx, req.NamespacedName, rc, pod)
	status := ComputeStatus(rc, Observed{Pod: pod, Receiver: recv, ReceiverError: recvErr, PodProblem: podProblem, ProblemReason: problemReason,
		Claim: claim, ReceiverReadAt: metav1.NewTime(r.lastRead(req.NamespacedName, pod)), StaleAfter: staleReads * r.pollInterval(),
		Now: metav1.NewTime(r.now())})
	setHeaderValid(&status, rc, pod, hp, metav1.NewTime(r.now())) // header_check.go
	prev := rc.Status.DeepCopy()
	written, err := r.updateStatus(ctx, rc, status)
	if err != nil {
		if apierrors.IsConflict(err) {
			// Read a newer RingCapture than the cache had: simply go again.
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		return ctrl.Result{}, err
	}
	if written {
		// Events only for a status the API server took: a status computed from a stale
		// cache conflicts above, and must not announce a transition a second time.
		r.recordTransitions(rc, *prev, status)
	}
	if err := r.stopFailedPod(ctx, rc, pod, status); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		return ctrl.Result{}, err
	}
	switch {
	case problemReason == ringcapv1.ReasonPodRefused || problemReason == ringcapv1.ReasonClaimTemplateRefused:
		// What fixes a refusal is not watched (a PriorityClass, a quota, the namespace's
		// labels): try again, less often the longer it lasts.
		return ctrl.Result{RequeueAfter: refusalRetry(status, r.now())}, nil
	case podProblem != "":
		// The other pod's changes are not watched (it is not ours): look again later.
		return ctrl.Result{RequeueAfter: conflictRecheck}, nil
	}
	return ctrl.Result{RequeueAfter: r.requeueAfter(rc, pod, status)}, nil
}

// reconcilePod returns the capture pod, creating it when the capture should run and
// has none, and replacing a finished pod built from an older spec.
func (r *RingCaptureReconciler) reconcilePod(ctx context.Context, rc *ringcapv1.RingCapture) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	key := types.NamespacedName{Namespace: rc.Namespace, Name: PodName(rc.Name)}
	err := r.Get(ctx, key, pod)
	switch {
	case err == nil:
		if !metav1.IsControlledBy(pod, rc) {
			return nil, fmt.Errorf("pod %s for RingCapture %s: %w", key, rc.Name, ErrPodConflict)
		}
		// A finished pod of an older generation is replaced, but only once the status has
		// recorded how its run ended (the next reconcile, after that status write).
		if podFinished(pod) && pod.DeletionTimestamp == nil && podGeneration(pod) != rc.Generation && runRecorded(rc.Status, pod) {
			return r.replacePod(ctx, rc, pod)
		}
		if replaceDisrupted(rc.Status, pod) {
			return r.deleteOutdated(ctx, rc, pod, fmt.Sprintf("Pod %s ended by a disruption (%s); a new pod starts",
				pod.Name, strings.TrimSpace(pod.Status.Reason+" "+pod.Status.Message)))
		}
		// A pod of an older generation that has accepted no data has nothing to lose:
		// the change applies at once.
		if unstartedPod(rc, pod) && r.receiverIdle(ctx, rc, pod) {
			return r.replaceUnstarted(ctx, rc, pod)
		}
		return pod, nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get pod %s: %w", key, err)
	}
	// No pod. If the capture ever had one, read the RingCapture around the cache before
	// creating another: the pod's deletion can arrive before the status write that
	// finished the capture. (A new capture, with no status yet, skips the read.)
	if rc.Status.Phase != "" || rc.Status.Pod != "" {
		fresh := &ringcapv1.RingCapture{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(rc), fresh); err != nil {
			return nil, fmt.Errorf("get RingCapture %s: %w", rc.Name, err)
		}
		*rc = *fresh
	}
	// A capture that finished with this spec is not run again.
	if isTerminal(rc.Status.Phase) && lastGeneration(rc.Status) == rc.Generation {
		return nil, nil
	}
	// A run that accepted data lost its pod: the status records the interrupted run
	// first (and says whether it restarts); the next reconcile acts on it.
	if runAccepted(rc.Status) {
		return nil, nil
	}
	return r.createPod(ctx, rc)
}

func (r *RingCaptureReconciler) createPod(ctx context.Context, rc *ringcapv1.RingCapture) (*corev1.Pod, error) {
	if err := r.admitHeader(ctx, rc); err != nil { // header_check.go
		return nil, err
	}
	if err := r.ensureClaimTemplate(ctx, rc); err != nil {
		return nil, err
	}
	lock, err := r.decideIPCLock(ctx, rc) // ipclock.go
	if err != nil {
		return nil, err
	}
	opts := r.Pods
	opts.IPCLock = &lock
	pod := BuildPod(rc, opts)
	if msg := readerMountsProblem(rc.Spec); msg != "" {
		r.Recorder.Eventf(rc, nil, corev1.EventTypeWarning, ringcapv1.ReasonPodCreateFailed, "CreatePod", "Create pod %s: %s", pod.Name, msg)
		return nil, &podRefusal{msg: fmt.Sprintf("capture pod %s not created: %s", pod.Name, msg)}
	}
	if err := controllerutil.SetControllerReference(rc, pod, r.Scheme); err != nil {
		return nil, fmt.Errorf("set controller reference on pod %s: %w", pod.Name, err)
	}
	err = r.Create(ctx, pod)
	if apierrors.IsAlreadyExists(err) {
		// The cache has not seen the pod yet (for example right after an operator
		// restart): read it from the API server instead of creating a second one.
		existing := &corev1.Pod{}
		if gerr := r.APIReader.Get(ctx, client.ObjectKeyFromObject(pod), existing); gerr != nil {
			return nil, fmt.Errorf("get existing pod %s: %w", pod.Name, gerr)
		}
		if !metav1.IsControlledBy(existing, rc) {
			return nil, fmt.Errorf("pod %s for RingCapture %s: %w", pod.Name, rc.Name, ErrPodConflict)
		}
		return existing, nil
	}
	if err != nil {
		r.Recorder.Eventf(rc, nil, corev1.EventTypeWarning, ringcapv1.ReasonPodCreateFailed, "CreatePod", "Create pod %s: %v", pod.Name, err)
		if isRefusal(err) {
			return nil, &podRefusal{msg: fmt.Sprintf("the API server refused capture pod %s: %v%s", pod.Name, err, ipcLockHint(lock, err))}
		}
		return nil, fmt.Errorf("create pod %s: %w", pod.Name, err)
	}
	podsCreatedTotal.Inc()
	log.FromContext(ctx).Info("Created capture pod", "pod", pod.Name)
	r.Recorder.Eventf(rc, pod, corev1.EventTypeNormal, ringcapv1.ReasonPodCreated, "CreatePod",
		"Created pod %s requesting %s", pod.Name, describeResources(pod))
	return pod, nil
}

// replacePod deletes a finished pod whose spec is outdated; the next reconcile (on the
// pod's deletion) creates its successor, and the status then starts a new run with the
// finished one in status.lastRun.
func (r *RingCaptureReconciler) replacePod(ctx context.Context, rc *ringcapv1.RingCapture, pod *corev1.Pod) (*corev1.Pod, error) {
	return r.deleteOutdated(ctx, rc, pod, fmt.Sprintf("The run of generation %d ended (%s, received %s); spec generation %d runs in a new pod",
		podGeneration(pod), rc.Status.Phase, HumanBytes(rc.Status.BytesReceived), rc.Generation))
}

// replaceUnstarted deletes a pod of an older generation that has accepted no data, so
// that a spec change (a nodeSelector typo fixed, a smaller ring) applies at once.
func (r *RingCaptureReconciler) replaceUnstarted(ctx context.Context, rc *ringcapv1.RingCapture, pod *corev1.Pod) (*corev1.Pod, error) {
	state := string(rc.Status.Phase)
	if c := apimeta.FindStatusCondition(rc.Status.Conditions, ringcapv1.ConditionReady); c != nil && c.Reason != "" {
		state += ", " + c.Reason
	}
	return r.deleteOutdated(ctx, rc, pod, fmt.Sprintf("Pod %s of generation %d had received no data (%s); spec generation %d runs in a new pod at once",
		pod.Name, podGeneration(pod), state, rc.Generation))
}

// receiverIdle says whether pod's receiver has accepted no data: it does not run, or
// its /status, read now, says so (a receiver that does not answer may have data).
func (r *RingCaptureReconciler) receiverIdle(ctx context.Context, rc *ringcapv1.RingCapture, pod *corev1.Pod) bool {
	if !receiverRunning(pod) {
		return true
	}
	port := containerPort(pod, "metrics")
	if port == 0 {
		port = rc.Spec.Receiver.MetricsPort
	}
	rs, err := r.Fetcher.Fetch(ctx, pod, port)
	return err == nil && idle(rs)
}

// deleteOutdated deletes pod (built from an older spec, or ended by a disruption) with
// note as the event, and returns it as being deleted: the next reconcile (on the pod's
// deletion) creates its successor.
func (r *RingCaptureReconciler) deleteOutdated(ctx context.Context, rc *ringcapv1.RingCapture, pod *corev1.Pod, note string) (*corev1.Pod, error) {
	if err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("delete outdated pod %s: %w", pod.Name, err)
	}
	r.Recorder.Eventf(rc, pod, corev1.EventTypeNormal, ringcapv1.ReasonPodReplaced, "DeletePod", "%s", note)
	r.forget(types.NamespacedName{Namespace: rc.Namespace, Name: rc.Name})
	gone := pod.DeepCopy()
	now := metav1.NewTime(r.now())
	gone.DeletionTimestamp = &now
	return gone, nil
}

// stopFailedPod stops the containers of a failed capture's pod, so that its ring and
// its RDMA unit are released, and keeps the pod object, so that its containers' logs
// and termination messages stay readable (kubectl logs) until the RingCapture is
// deleted or its spec changes. It sets activeDeadlineSeconds (the one pod spec field
// that may shorten a running pod's life): the kubelet then kills the containers and
// marks the pod Failed (DeadlineExceeded). The status was written first, so it keeps
// the failure that stopped the pod.
func (r *RingCaptureReconciler) stopFailedPod(ctx context.Context, rc *ringcapv1.RingCapture, pod *corev1.Pod, st ringcapv1.RingCaptureStatus) error {
	if st.Phase != ringcapv1.PhaseFailed || pod == nil || pod.DeletionTimestamp != nil || podFinished(pod) ||
		pod.Spec.ActiveDeadlineSeconds != nil || pod.Status.StartTime == nil {
		return nil
	}
	base := pod.DeepCopy()
	pod.Spec.ActiveDeadlineSeconds = ptr(int64(1))
	// The optimistic lock makes a pod read from a stale cache conflict instead of
	// announcing the stop twice.
	if err := r.Patch(ctx, pod, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("stop pod %s of failed RingCapture %s: %w", pod.Name, rc.Name, err)
	}
	log.FromContext(ctx).Info("Stopped the pod of a failed capture", "pod", pod.Name)
	r.Recorder.Eventf(rc, pod, corev1.EventTypeNormal, ringcapv1.ReasonPodStopped, "StopPod",
		"Stopping pod %s: the capture failed. Its ring and RDMA unit are released; the pod and its containers' logs stay until the RingCapture is deleted or its spec changes", pod.Name)
	return nil
}

// runRecorded says whether the status already records the end of pod's run.
func runRecorded(st ringcapv1.RingCaptureStatus, pod *corev1.Pod) bool {
	return isTerminal(st.Phase) && (st.Running == nil || st.Running.Generation == podGeneration(pod))
}

// lastGeneration is the generation of the status's run (status.running), or the
// observed generation for a status written before status.running existed.
func lastGeneration(st ringcapv1.RingCaptureStatus) int64 {
	if st.Running != nil {
		return st.Running.Generation
	}
	return st.ObservedGeneration
}

// receiverStatus returns what the receiver last said: its final summary once it has
// exited, else its /status, read at most every PollInterval per capture.
func (r *RingCaptureReconciler) receiverStatus(ctx context.Context, key types.NamespacedName, rc *ringcapv1.RingCapture, pod *corev1.Pod) (*statusdoc.Status, string) {
	if pod == nil || pod.DeletionTimestamp != nil {
		return nil, ""
	}
	if s := terminationSummary(pod); s != nil {
		return s, ""
	}
	if receiverTerminated(pod) != nil || podFinished(pod) || pod.Status.Phase != corev1.PodRunning {
		r.mu.Lock()
		p, ok := r.polls[key]
		r.mu.Unlock()
		if ok && p.podUID == pod.UID && podFinished(pod) {
			return p.status, p.err // the last numbers seen before the pod ended
		}
		return nil, ""
	}

	r.mu.Lock()
	p, ok := r.polls[key]
	r.mu.Unlock()
	now := r.now()
	if ok && p.podUID == pod.UID && now.Sub(p.at) < r.pollEvery(pod, !receiverStarted(p.status), now) {
		return p.status, p.err
	}
	port := containerPort(pod, "metrics") // where the running receiver listens, whatever the spec says now
	if port == 0 {
		port = rc.Spec.Receiver.MetricsPort
	}
	st, err := r.Fetcher.Fetch(ctx, pod, port)
	np := poll{podUID: pod.UID, at: now, okAt: now, status: st}
	if err != nil {
		statusPollsTotal.WithLabelValues("error").Inc()
		np.err, np.okAt = err.Error(), time.Time{}
		if ok && p.podUID == pod.UID {
			np.status, np.okAt = p.status, p.okAt // keep the last good numbers
		}
		log.FromContext(ctx).V(1).Info("Receiver status not available", "pod", pod.Name, "error", err.Error())
	} else {
		statusPollsTotal.WithLabelValues("ok").Inc()
	}
	r.mu.Lock()
	if r.polls == nil {
		r.polls = map[types.NamespacedName]poll{}
	}
	r.polls[key] = np
	r.mu.Unlock()
	return np.status, np.err
}

// recordTransitions emits events for what a user should see change from prev to next.
func (r *RingCaptureReconciler) recordTransitions(rc *ringcapv1.RingCapture, prev, next ringcapv1.RingCaptureStatus) {
	changed := func(t string) *metav1.Condition {
		n := apimeta.FindStatusCondition(next.Conditions, t)
		o := apimeta.FindStatusCondition(prev.Conditions, t)
		if n == nil || (o != nil && o.Status == n.Status && o.Reason == n.Reason) {
			return nil
		}
		return n
	}
	if c := changed(ringcapv1.ConditionScheduled); c != nil {
		switch c.Reason {
		case ringcapv1.ReasonUnschedulable, ringcapv1.ReasonClaimNotAllocatable, ringcapv1.ReasonClaimTemplateNotFound:
			r.Recorder.Eventf(rc, nil, corev1.EventTypeWarning, c.Reason, "Schedule", "%s", c.Message)
		case ringcapv1.ReasonScheduled:
			r.Recorder.Eventf(rc, nil, corev1.EventTypeNormal, ringcapv1.ReasonScheduled, "Schedule", "Capture pod %s %s", next.Pod, c.Message)
		}
	}
	if c := changed(ringcapv1.ConditionReady); c != nil && c.Status == metav1.ConditionTrue {
		r.Recorder.Eventf(rc, nil, corev1.EventTypeNormal, ringcapv1.ReasonReceiverReady, "Listen", "Receiver ready: %s", c.Message)
	}
	if c := changed(ringcapv1.ConditionReadersBehind); c != nil && c.Status == metav1.ConditionTrue {
		r.Recorder.Eventf(rc, nil, corev1.EventTypeWarning, ringcapv1.ReasonReadersBehind, "Receive", "%s", c.Message)
	}
	if c := changed(ringcapv1.ConditionChangePending); c != nil && c.Status == metav1.ConditionTrue {
		r.Recorder.Eventf(rc, nil, corev1.EventTypeNormal, ringcapv1.ReasonSpecChangePending, "Update", "%s", c.Message)
	}
	if msg := interrupted(prev, next); msg != "" {
		r.Recorder.Eventf(rc, nil, corev1.EventTypeWarning, ringcapv1.ReasonRunInterrupted, "Receive", "Run interrupted: %s", msg)
	}
	if next.Phase == prev.Phase {
		return
	}
	phaseTransitionsTotal.WithLabelValues(string(next.Phase)).Inc()
	switch next.Phase {
	case ringcapv1.PhaseReceiving:
		r.Recorder.Eventf(rc, nil, corev1.EventTypeNormal, ringcapv1.ReasonReceiving, "Receive", "Data is arriving")
	case ringcapv1.PhaseSucceeded:
		r.Recorder.Eventf(rc, nil, corev1.EventTypeNormal, ringcapv1.ReasonSucceeded, "Finish", "Capture finished: received %s in %d blocks, %d observations",
			next.Received, next.BlocksFilled, next.Observations)
	case ringcapv1.PhaseFailed:
		msg := ""
		if c := apimeta.FindStatusCondition(next.Conditions, ringcapv1.ConditionFailed); c != nil {
			msg = c.Message
		}
		r.Recorder.Eventf(rc, nil, corev1.EventTypeWarning, ringcapv1.ReasonFailed, "Finish", "Capture failed: %s", msg)
	}
}

// updateStatus writes the status when it changed (an unchanged status costs no write,
// which keeps reconcile idempotent and the API server quiet) and says whether it wrote.
// The write is an update with the resourceVersion that was read, so a status computed
// from a stale cache can never overwrite a newer one: it conflicts, and the caller
// reconciles again.
func (r *RingCaptureReconciler) updateStatus(ctx context.Context, rc *ringcapv1.RingCapture, status ringcapv1.RingCaptureStatus) (bool, error) {
	if equality.Semantic.DeepEqual(rc.Status, status) {
		return false, nil
	}
	rc.Status = status
	if err := r.Status().Update(ctx, rc); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil // deleted meanwhile
		}
		return false, fmt.Errorf("update status of RingCapture %s: %w", rc.Name, err)
	}
	statusUpdatesTotal.Inc()
	return true, nil
}

// requeueAfter polls running receivers and looks again at a starting pod's deadline;
// everything else is driven by watch events.
func (r *RingCaptureReconciler) requeueAfter(rc *ringcapv1.RingCapture, pod *corev1.Pod, st ringcapv1.RingCaptureStatus) time.Duration {
	if pod == nil || pod.DeletionTimestamp != nil || isTerminal(st.Phase) {
		return 0
	}
	var every time.Duration
	if pod.Status.Phase == corev1.PodRunning {
		starting := st.Phase == ringcapv1.PhasePending || st.Phase == ringcapv1.PhaseScheduled
		every = r.pollEvery(pod, starting, r.now())
	}
	if left, ok := startDeadlineLeft(rc, pod, st, r.now()); ok && (every == 0 || left < every) {
		return left + deadlineSlack
	}
	return every
}

// deadlineSlack is how long after a start deadline its reconcile runs, so that it
// sees the deadline passed.
const deadlineSlack = 100 * time.Millisecond

// staleReads is how many poll intervals /status may fail before the receiver counts
// as unreachable.
const staleReads = 3

// lastRead is when pod's receiver last answered /status (zero when it never did).
func (r *RingCaptureReconciler) lastRead(key types.NamespacedName, pod *corev1.Pod) time.Time {
	if pod == nil {
		return time.Time{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.polls[key]; ok && p.podUID == pod.UID {
		return p.okAt
	}
	return time.Time{}
}

// receiverStarted reports whether a receiver's /status said it is past its start-up.
func receiverStarted(st *statusdoc.Status) bool {
	return st != nil && st.State != statusdoc.StateStarting
}

// pollEvery is the /status poll interval for pod: startupPollInterval while its receiver
// is starting (has not said it listens) within startupPollFor of the pod's start, else
// the configured interval.
func (r *RingCaptureReconciler) pollEvery(pod *corev1.Pod, starting bool, now time.Time) time.Duration {
	every := r.pollInterval()
	if !starting || every <= startupPollInterval {
		return every
	}
	if st := pod.Status.StartTime; st != nil && now.Sub(st.Time) > startupPollFor {
		return every
	}
	return startupPollInterval
}

func (r *RingCaptureReconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.polls, key)
	r.mu.Unlock()
}

func (r *RingCaptureReconciler) pollInterval() time.Duration {
	if r.PollInterval > 0 {
		return r.PollInterval
	}
	return statusPollInterval
}

func (r *RingCaptureReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func podFinished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// ErrPodConflict is returned when the capture pod's name is taken by a pod the
// RingCapture does not control.
var ErrPodConflict = errors.New("pod name taken by another owner")
