package controller

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// BuildPod puts spec.volumes into the capture pod, beside the operator's header volume,
// and each reader's volumeMounts into its container (a Restart reader's sidecar too);
// the receiver mounts none of them.
func TestBuildPodVolumes(t *testing.T) {
	rc := defaulted("disk")
	rc.Spec.Ring.Readers = 2
	rc.Spec.Ring.Header = &ringcapv1.RingHeaderSpec{Template: "TELESCOPE Parkes\n"}
	rc.Spec.Volumes = []ringcapv1.CaptureVolume{
		{Name: "data", PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "capture-data"}},
		{Name: "scratch", EmptyDir: &corev1.EmptyDirVolumeSource{}},
	}
	dataMount := corev1.VolumeMount{Name: "data", MountPath: "/data"}
	rc.Spec.Readers = []ringcapv1.ReaderContainer{
		{Name: "dbdisk", Args: []string{"ring", "read", "--dada-dir", "/data"}, VolumeMounts: []corev1.VolumeMount{dataMount, {Name: "scratch", MountPath: "/tmp"}}},
		{Name: "verify", RestartPolicy: ringcapv1.ReaderRestart, VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/in", ReadOnly: true}}},
	}
	pod := BuildPod(rc, DefaultPodOptions())
	var names []string
	for _, v := range pod.Spec.Volumes {
		names = append(names, v.Name)
	}
	wantData := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "capture-data"}}}
	if strings.Join(names, ",") != headerVolume+",data,scratch" || !reflect.DeepEqual(pod.Spec.Volumes[1], wantData) {
		t.Errorf("pod volumes %v (%+v), want the header's then spec.volumes", names, pod.Spec.Volumes)
	}
	mounts := map[string][]corev1.VolumeMount{}
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		mounts[c.Name] = c.VolumeMounts
	}
	if !reflect.DeepEqual(mounts["dbdisk"], rc.Spec.Readers[0].VolumeMounts) || !reflect.DeepEqual(mounts["verify"], rc.Spec.Readers[1].VolumeMounts) {
		t.Errorf("reader mounts %+v, want each reader's volumeMounts", mounts)
	}
	if m := mounts[ringcapv1.ReceiverContainerName]; len(m) != 1 || m[0].Name != headerVolume {
		t.Errorf("receiver mounts %+v, want the header volume only", m)
	}
	rc.Spec.Readers[0].VolumeMounts[0].MountPath = "/changed"
	if mounts["dbdisk"][0].MountPath != "/data" {
		t.Error("the pod shares the RingCapture's volume mounts instead of copying them")
	}
	rc.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = "changed"
	if pod.Spec.Volumes[1].PersistentVolumeClaim.ClaimName != "capture-data" {
		t.Error("the pod shares the RingCapture's volume sources instead of copying them")
	}
}

func TestReaderMountsProblem(t *testing.T) {
	vols := []ringcapv1.CaptureVolume{{Name: "data"}}
	for _, c := range []struct {
		name    string
		volumes []ringcapv1.CaptureVolume
		mount   corev1.VolumeMount
		want    string
	}{
		{"fine", vols, corev1.VolumeMount{Name: "data", MountPath: "/data"}, ""},
		{"under a name like dev", vols, corev1.VolumeMount{Name: "data", MountPath: "/devices/x"}, ""},
		{"unknown volume", vols, corev1.VolumeMount{Name: "dta", MountPath: "/data"}, `spec.readers[0].volumeMounts[0] names volume "dta", which spec.volumes does not have`},
		{"no volumes", nil, corev1.VolumeMount{Name: "data", MountPath: "/data"}, "which spec.volumes does not have"},
		{"dev with slashes", vols, corev1.VolumeMount{Name: "data", MountPath: "//dev/"}, `mountPath "//dev/" is /dev or under it`},
		{"dot-dot to dev/shm", vols, corev1.VolumeMount{Name: "data", MountPath: "/data/../dev/shm"}, "is /dev or under it"},
		{"operator's header dir", vols, corev1.VolumeMount{Name: "data", MountPath: "/etc/./ringcap/header"}, "is /etc/ringcap or under it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := ringcapv1.RingCaptureSpec{Volumes: c.volumes, Readers: []ringcapv1.ReaderContainer{{Name: "r", VolumeMounts: []corev1.VolumeMount{c.mount}}}}
			got := readerMountsProblem(spec)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("readerMountsProblem = %q, want %q", got, c.want)
			}
		})
	}
}

// podVolume carries each source of a CaptureVolume to the pod volume's source of the same
// JSON name (so a source added to CaptureVolume and not to podVolume fails here), and
// only that one.
func TestPodVolumeCarriesEverySource(t *testing.T) {
	cv := reflect.TypeFor[ringcapv1.CaptureVolume]()
	vs := reflect.TypeFor[corev1.VolumeSource]()
	sources := 0
	for i := range cv.NumField() {
		f := cv.Field(i)
		if f.Type.Kind() != reflect.Pointer {
			continue
		}
		sources++
		t.Run(f.Name, func(t *testing.T) {
			var v ringcapv1.CaptureVolume
			v.Name = "v"
			src := reflect.New(f.Type.Elem())
			reflect.ValueOf(&v).Elem().Field(i).Set(src)
			got := podVolume(v)
			if got.Name != "v" {
				t.Errorf("pod volume name %q, want v", got.Name)
			}
			tag := jsonName(f)
			set := 0
			for j := range vs.NumField() {
				pv := reflect.ValueOf(got.VolumeSource).Field(j)
				if pv.Kind() != reflect.Pointer || pv.IsNil() {
					continue
				}
				set++
				if jsonName(vs.Field(j)) != tag || pv.Pointer() != src.Pointer() {
					t.Errorf("CaptureVolume.%s became VolumeSource.%s", f.Name, vs.Field(j).Name)
				}
			}
			if set != 1 {
				t.Errorf("CaptureVolume.%s set %d pod volume sources, want 1", f.Name, set)
			}
		})
	}
	if sources != 4 {
		t.Errorf("CaptureVolume has %d sources, want the 4 the CRD's rule counts", sources)
	}
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}
