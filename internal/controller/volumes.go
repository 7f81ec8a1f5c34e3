package controller

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// reservedMountDirs are the paths no reader mount may cover: the container's devices
// (/dev/shm, the termination log) and the operator's own files.
var reservedMountDirs = []string{"/dev", "/etc/ringcap"}

// readerMountsProblem says what is wrong with the readers' volume mounts beyond what the
// CRD's rules check at apply time (which string comparisons across lists would make too
// costly there): a mount naming no volume of spec.volumes, or a path that is /dev or
// /etc/ringcap (or under them) once cleaned. "" when nothing is.
func readerMountsProblem(spec ringcapv1.RingCaptureSpec) string {
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
	}
	for i, rd := range spec.Readers {
		for j, m := range rd.VolumeMounts {
			at := fmt.Sprintf("spec.readers[%d].volumeMounts[%d]", i, j)
			if !volumes[m.Name] {
				return fmt.Sprintf("%s names volume %q, which spec.volumes does not have", at, m.Name)
			}
			if dir := reservedDir(m.MountPath); dir != "" {
				return fmt.Sprintf("%s.mountPath %q is %s or under it, which a reader volume must not cover", at, m.MountPath, dir)
			}
		}
	}
	return ""
}

// reservedDir returns the reserved directory that p, cleaned, is or lies under ("" if none).
func reservedDir(p string) string {
	c := path.Clean("/" + p)
	for _, d := range reservedMountDirs {
		if c == d || strings.HasPrefix(c, d+"/") {
			return d
		}
	}
	return ""
}

// podVolumes are spec.volumes as the capture pod's volumes, copied.
func podVolumes(vs []ringcapv1.CaptureVolume) []corev1.Volume {
	var out []corev1.Volume
	for i := range vs {
		out = append(out, podVolume(*vs[i].DeepCopy()))
	}
	return out
}

// podVolume is a capture volume as a pod volume with the same name and source.
func podVolume(v ringcapv1.CaptureVolume) corev1.Volume {
	return corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: v.PersistentVolumeClaim,
		HostPath:              v.HostPath,
		NFS:                   v.NFS,
		EmptyDir:              v.EmptyDir,
	}}
}
