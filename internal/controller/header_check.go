package controller

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/pkg/capture/headerrules"
)

// The header check (issue 51): before it creates the capture pod, the operator builds
// the observation header as the receiver would at start (headerrules.Check: the
// template, inline or from its ConfigMap, ring.header.values, ring.headerBlockBytes).
// A header that cannot work keeps the pod from being created, with HeaderValid False
// and Ready False saying why, instead of a pod whose receiver fails at start or at its
// first sender. The ConfigMap is read around the cache (the operator does not watch
// ConfigMaps); a capture held back by its header is looked at again after
// conflictRecheck.
//
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get

// headerProblem is why a capture's header cannot work: no pod is created, and reason
// and msg are HeaderValid's (and Ready's).
type headerProblem struct {
	reason, msg string
}

func (p *headerProblem) Error() string { return p.msg }

// headerTemplate is the template text of ring.header as the receiver gets it: nil
// without a template (the receiver's default); missing says why a ConfigMap's
// template could not be read ("" when it was).
func (r *RingCaptureReconciler) headerTemplate(ctx context.Context, rc *ringcapv1.RingCapture) (text []byte, missing string, err error) {
	h := rc.Spec.Ring.Header
	switch {
	case h == nil || (h.Template == "" && h.ConfigMapRef == nil):
		return nil, "", nil
	case h.ConfigMapRef == nil:
		return []byte(h.Template), "", nil
	}
	ref := *h.ConfigMapRef
	if ref.Key == "" {
		ref.Key = headerFileName
	}
	cm := &corev1.ConfigMap{}
	err = r.APIReader.Get(ctx, types.NamespacedName{Namespace: rc.Namespace, Name: ref.Name}, cm)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Sprintf("ConfigMap %s (ring.header.configMapRef) does not exist", ref.Name), nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("get header ConfigMap %s/%s: %w", rc.Namespace, ref.Name, err)
	}
	return configMapTemplate(cm, ref)
}

// configMapTemplate is the template under ref.Key of cm (data or binaryData).
func configMapTemplate(cm *corev1.ConfigMap, ref ringcapv1.ConfigMapKeyReference) ([]byte, string, error) {
	if v, ok := cm.Data[ref.Key]; ok {
		return []byte(v), "", nil
	}
	if v, ok := cm.BinaryData[ref.Key]; ok {
		return v, "", nil
	}
	return nil, fmt.Sprintf("ConfigMap %s (ring.header.configMapRef) has no key %q", ref.Name, ref.Key), nil
}

// HeaderCondition is HeaderValid for a ring spec whose template (nil: the receiver's
// default) was read, or could not be read for the reason missing.
func HeaderCondition(ring ringcapv1.RingSpec, template []byte, missing string) metav1.Condition {
	const t = ringcapv1.ConditionHeaderValid
	if missing != "" {
		return condition(t, metav1.ConditionFalse, ringcapv1.ReasonHeaderConfigMapNotFound, missing+"; the capture pod is created once it does")
	}
	if err := headerrules.Check(template, headerSettings(ring.Header), int(ring.HeaderBlockBytes)); err != nil {
		return condition(t, metav1.ConditionFalse, ringcapv1.ReasonHeaderInvalid, fmt.Sprintf("%s: %v", headerSource(ring.Header), err))
	}
	return headerValid(ring.HeaderBlockBytes)
}

func headerValid(blockBytes int64) metav1.Condition {
	return condition(ringcapv1.ConditionHeaderValid, metav1.ConditionTrue, ringcapv1.ReasonHeaderValid,
		fmt.Sprintf("the observation header fits ring.headerBlockBytes (%d bytes)", blockBytes))
}

// headerSettings are ring.header.values in the order the pod passes them (sorted keys).
func headerSettings(h *ringcapv1.RingHeaderSpec) [][2]string {
	if h == nil {
		return nil
	}
	keys := make([]string, 0, len(h.Values))
	for k := range h.Values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][2]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, [2]string{k, string(h.Values[k])})
	}
	return out
}

// headerSource names what the header is built from, for a condition's message.
func headerSource(h *ringcapv1.RingHeaderSpec) string {
	switch {
	case h == nil:
		return "header"
	case h.ConfigMapRef != nil:
		key := h.ConfigMapRef.Key
		if key == "" {
			key = headerFileName
		}
		return fmt.Sprintf("header from ConfigMap %s key %s with ring.header.values", h.ConfigMapRef.Name, key)
	case h.Template != "":
		return "header from ring.header.template with ring.header.values"
	}
	return "header from ring.header.values"
}

// admitHeader checks the header before the capture pod is created: a header that
// cannot work is a *headerProblem (and a Warning event when it is news).
func (r *RingCaptureReconciler) admitHeader(ctx context.Context, rc *ringcapv1.RingCapture) error {
	text, missing, err := r.headerTemplate(ctx, rc)
	if err != nil {
		return err
	}
	c := HeaderCondition(rc.Spec.Ring, text, missing)
	if c.Status == metav1.ConditionTrue {
		return nil
	}
	if prev := apimeta.FindStatusCondition(rc.Status.Conditions, c.Type); prev == nil || prev.Message != c.Message {
		r.Recorder.Eventf(rc, nil, corev1.EventTypeWarning, c.Reason, "CheckHeader", "%s", c.Message)
	}
	return &headerProblem{reason: c.Reason, msg: c.Message}
}

// setHeaderValid writes HeaderValid into st: False with hp when the header kept the pod
// from being created; True once a pod of the current generation exists (its header
// was checked before it was created); unchanged otherwise.
func setHeaderValid(st *ringcapv1.RingCaptureStatus, rc *ringcapv1.RingCapture, pod *corev1.Pod, hp *headerProblem, now metav1.Time) {
	var c metav1.Condition
	switch {
	case hp != nil:
		c = condition(ringcapv1.ConditionHeaderValid, metav1.ConditionFalse, hp.reason, hp.msg)
	case pod != nil && pod.DeletionTimestamp == nil && podGeneration(pod) == rc.Generation:
		c = headerValid(rc.Spec.Ring.HeaderBlockBytes)
	default:
		return
	}
	setConditions(st, rc.Generation, now, c)
}
