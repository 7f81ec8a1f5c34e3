//go:build envtest

package controller_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// A reader mount that names no volume of spec.volumes (which the CRD cannot check cheaply)
// is refused by the operator before it creates the pod, with a status that names the mount;
// adding the volume lets the pod be created, with the volume and the reader's mount.
func TestReaderMountWithoutVolumeRefused(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "mounts")
	newCapture(t, ns, "disk", func(rc *ringcapv1.RingCapture) {
		rc.Spec.Readers = []ringcapv1.ReaderContainer{{Name: "disk", Args: []string{"ring", "read", "--dada-dir", "/data"},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}
	})
	rc := waitCapture(t, ns, "disk", "the refused mount in the status", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionScheduled, metav1.ConditionFalse, ringcapv1.ReasonPodRefused)
	})
	if msg := condition(rc, ringcapv1.ConditionScheduled).Message; !strings.Contains(msg, `spec.readers[0].volumeMounts[0] names volume "data", which spec.volumes does not have`) {
		t.Errorf("Scheduled message %q does not name the mount", msg)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rc := getCapture(t, ns, "disk")
		rc.Spec.Volumes = []ringcapv1.CaptureVolume{{Name: "data", EmptyDir: &corev1.EmptyDirVolumeSource{}}}
		return env.Client.Update(context.Background(), rc)
	})
	if err != nil {
		t.Fatalf("add the volume: %v", err)
	}
	pod := waitPod(t, ns, "disk")
	var mounts []corev1.VolumeMount
	for _, c := range pod.Spec.Containers {
		if c.Name == "disk" {
			mounts = c.VolumeMounts
		}
	}
	if len(pod.Spec.Volumes) != 1 || pod.Spec.Volumes[0].EmptyDir == nil || len(mounts) != 1 || mounts[0].MountPath != "/data" {
		t.Errorf("pod volumes %+v, reader mounts %+v; want the emptyDir mounted at /data", pod.Spec.Volumes, mounts)
	}
}
