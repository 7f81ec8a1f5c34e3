package controller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// udp.presenceKey reaches the receiver as --presence-key and every reader as
// RINGCAP_PRESENCE_KEY, and the receiver's memory grows by the presence ring.
func TestPresenceRing(t *testing.T) {
	rc := speadCapture("s")
	rc.Spec.Readers = []ringcapv1.ReaderContainer{{Name: "dbdisk", Env: []corev1.EnvVar{{Name: "X", Value: "1"}}}}
	before := BuildPod(rc, DefaultPodOptions())
	if a := strings.Join(ReceiverArgs(rc), " "); strings.Contains(a, "--presence-key") {
		t.Errorf("args without a presence key: %s", a)
	}
	if env := before.Spec.Containers[1].Env; len(env) != 2 || env[0].Name != EnvRingKey || env[1].Name != "X" {
		t.Errorf("reader env without a presence key: %v", env)
	}
	rc.Spec.Receiver.UDP.PresenceKey = "0xEADA"
	if a := strings.Join(ReceiverArgs(rc), " "); !strings.Contains(a, "--udp-idle-timeout 1m30s --presence-key eada --spead-timestamp-id") {
		t.Errorf("args: %s", a)
	}
	pod := BuildPod(rc, DefaultPodOptions())
	env := pod.Spec.Containers[1].Env
	if len(env) != 3 || env[0] != (corev1.EnvVar{Name: EnvRingKey, Value: "dada"}) || env[1] != (corev1.EnvVar{Name: EnvPresenceKey, Value: "eada"}) || env[2].Name != "X" {
		t.Errorf("reader env %v", env)
	}
	// 4 records of 56 + 524288/8192/8 bytes and 8 header blocks of 4096.
	if got := PresenceRingBytes(rc); got != 4*(56+8)+8*4096 {
		t.Errorf("presence ring bytes %d", got)
	}
	m0, m1 := before.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory], pod.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]
	m1.Sub(m0)
	if m1.Value() != PresenceRingBytes(rc) {
		t.Errorf("receiver memory grew by %s", m1.String())
	}
	rc.Spec.Receiver.UDP.PresenceGranuleBytes = ptr(int64(4096))
	if a := strings.Join(ReceiverArgs(rc), " "); !strings.Contains(a, "--presence-key eada --presence-granule 4096 --spead-timestamp-id") {
		t.Errorf("args with a granule: %s", a)
	}
	// 4 records of 56 + 524288/4096/8 bytes.
	if got := PresenceRingBytes(rc); got != 4*(56+16)+8*4096 {
		t.Errorf("presence ring bytes at granule 4096: %d", got)
	}
	rc.Spec.Receiver.UDP.PresenceKey = ""
	if a := strings.Join(ReceiverArgs(rc), " "); strings.Contains(a, "--presence") {
		t.Errorf("args with a granule and no presence key: %s", a)
	}
	v := vdifCapture("v")
	v.Spec.Receiver.UDP.PresenceKey = "eada"
	if got := PresenceRingBytes(v); got != 4*(56+9)+8*4096 { // granule 8000: 66 granules
		t.Errorf("VDIF presence ring bytes %d", got)
	}
	v.Spec.Receiver.UDP.PresenceGranuleBytes = ptr(int64(524288))
	if got := PresenceRingBytes(v); got != 4*(56+1)+8*4096 { // the spec's granule before the data array's
		t.Errorf("VDIF presence ring bytes at granule 524288: %d", got)
	}
	v.Spec.Receiver.Protocol = ringcapv1.ProtocolRDMA
	if PresenceRingBytes(v) != 0 || len(readerEnv(v.Spec)) != 1 {
		t.Error("an RDMA capture has a presence ring")
	}
}
