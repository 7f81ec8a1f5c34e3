package controller

import (
	corev1 "k8s.io/api/core/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/pkg/ingest/presence"
)

// EnvPresenceKey is set in every reader container to the presence ring's key when the
// capture has one (receiver.udp.presenceKey).
const EnvPresenceKey = "RINGCAP_PRESENCE_KEY"

// presenceKey is the capture's presence ring key, normalised ("" for none).
func presenceKey(spec ringcapv1.RingCaptureSpec) string {
	u := spec.Receiver.UDP
	if !spec.Receiver.Protocol.IsPacket() || u == nil || u.PresenceKey == "" {
		return ""
	}
	return NormalizeKey(u.PresenceKey)
}

// readerEnv is what every reader container is told: the ring's key and the presence
// ring's, if any.
func readerEnv(spec ringcapv1.RingCaptureSpec) []corev1.EnvVar {
	env := []corev1.EnvVar{{Name: EnvRingKey, Value: NormalizeKey(spec.Ring.Key)}}
	if k := presenceKey(spec); k != "" {
		env = append(env, corev1.EnvVar{Name: EnvPresenceKey, Value: k})
	}
	return env
}

// PresenceRingBytes is the shared memory of the capture's presence ring (0 without
// one): a record of each data block per block, at the granule the receiver uses, and
// its 8 header blocks.
func PresenceRingBytes(rc *ringcapv1.RingCapture) int64 {
	spec := rc.Spec
	if presenceKey(spec) == "" {
		return 0
	}
	r := spec.Ring
	return r.Blocks*int64(presence.Bytes(uint64(r.BlockBytes), presenceGranule(spec))) + headerRingBlocks*r.HeaderBlockBytes
}

// presenceGranule is the granule the receiver uses: udp.presenceGranuleBytes when set,
// else the VDIF data array when the spec gives it, else presence.DefaultGranule.
func presenceGranule(spec ringcapv1.RingCaptureSpec) uint64 {
	if u := spec.Receiver.UDP; u != nil && u.PresenceGranuleBytes != nil && *u.PresenceGranuleBytes > 0 {
		return uint64(*u.PresenceGranuleBytes)
	}
	if v := spec.Receiver.VDIF; spec.Receiver.Protocol == ringcapv1.ProtocolVDIF && v != nil && v.PayloadBytes != nil && *v.PayloadBytes > 0 {
		return uint64(*v.PayloadBytes)
	}
	return presence.DefaultGranule
}
