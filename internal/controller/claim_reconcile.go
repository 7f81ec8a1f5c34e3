package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// claimProblem is why the operator could not make a capture's ResourceClaimTemplate
// (its name is taken, or the API server refused it): shown in the status instead of a
// pod, with reason as the condition's reason.
type claimProblem struct {
	reason, msg string
}

func (p *claimProblem) Error() string { return p.msg }

// ensureClaimTemplate makes the ResourceClaimTemplate of a capture with
// receiver.deviceClassName exist with the current spec, before a pod claims from it.
// A template's spec is immutable, so an outdated one (from an earlier generation,
// whose pod already has its claim) is deleted and created again. Templates are read
// around the cache: the operator does not watch them.
func (r *RingCaptureReconciler) ensureClaimTemplate(ctx context.Context, rc *ringcapv1.RingCapture) error {
	want := BuildClaimTemplate(rc)
	if want == nil {
		return r.removeClaimTemplate(ctx, rc)
	}
	if err := controllerutil.SetControllerReference(rc, want, r.Scheme); err != nil {
		return fmt.Errorf("set controller reference on ResourceClaimTemplate %s: %w", want.Name, err)
	}
	have := &resourcev1.ResourceClaimTemplate{}
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), have)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("get ResourceClaimTemplate %s: %w", want.Name, err)
	case !metav1.IsControlledBy(have, rc):
		return &claimProblem{ringcapv1.ReasonClaimTemplateConflict, fmt.Sprintf(
			"ResourceClaimTemplate %s exists and is not controlled by this RingCapture: rename the capture or remove that template", want.Name)}
	case equality.Semantic.DeepEqual(have.Spec, want.Spec):
		return nil
	default:
		if err := r.Delete(ctx, have, client.Preconditions{UID: &have.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete outdated ResourceClaimTemplate %s: %w", have.Name, err)
		}
	}
	if err := r.Create(ctx, want); err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			return &claimProblem{ringcapv1.ReasonClaimTemplateRefused, fmt.Sprintf(
				"the API server refused ResourceClaimTemplate %s (receiver.deviceClassName %q, receiver.selector): %v", want.Name, rc.Spec.Receiver.DeviceClassName, err)}
		}
		return fmt.Errorf("create ResourceClaimTemplate %s: %w", want.Name, err)
	}
	log.FromContext(ctx).Info("Created ResourceClaimTemplate", "template", want.Name, "deviceClass", want.Spec.Spec.Devices.Requests[0].Exactly.DeviceClassName)
	return nil
}

// removeClaimTemplate deletes the template an earlier run of the capture claimed from
// (status.running says so) when the new spec no longer asks for one; the earlier pod
// has its claim already. Nothing is read for a capture that never used one.
func (r *RingCaptureReconciler) removeClaimTemplate(ctx context.Context, rc *ringcapv1.RingCapture) error {
	name := ClaimTemplateName(rc.Name)
	if rc.Status.Running == nil || rc.Status.Running.DeviceClaimTemplate != name {
		return nil
	}
	have := &resourcev1.ResourceClaimTemplate{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: rc.Namespace, Name: name}, have)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("get ResourceClaimTemplate %s: %w", name, err)
	case !metav1.IsControlledBy(have, rc):
		return nil
	}
	if err := r.Delete(ctx, have, client.Preconditions{UID: &have.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ResourceClaimTemplate %s no longer used: %w", name, err)
	}
	log.FromContext(ctx).Info("Deleted the ResourceClaimTemplate the spec no longer uses", "template", name)
	return nil
}

// observeClaim reads what a pod that waits for the scheduler needs said about its
// device claim: the claim (is it allocated?) or, before it exists, whether its
// template does. Nothing is read for a scheduled pod or one without a claim.
func (r *RingCaptureReconciler) observeClaim(ctx context.Context, pod *corev1.Pod) (ClaimObservation, error) {
	name, claims := podDeviceClaim(pod)
	if !claims || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
		return ClaimObservation{}, nil
	}
	if name != "" {
		claim := &resourcev1.ResourceClaim{}
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: name}, claim)
		switch {
		case apierrors.IsNotFound(err):
			return ClaimObservation{}, nil
		case err != nil:
			return ClaimObservation{}, fmt.Errorf("get ResourceClaim %s of pod %s: %w", name, pod.Name, err)
		}
		return ClaimObservation{Claim: claim}, nil
	}
	tpl := podClaimTemplate(pod)
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: tpl}, &resourcev1.ResourceClaimTemplate{})
	switch {
	case apierrors.IsNotFound(err):
		return ClaimObservation{TemplateMissing: true}, nil
	case err != nil:
		return ClaimObservation{}, fmt.Errorf("get ResourceClaimTemplate %s of pod %s: %w", tpl, pod.Name, err)
	}
	return ClaimObservation{}, nil
}
