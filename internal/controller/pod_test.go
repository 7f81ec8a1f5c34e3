package controller

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// defaulted returns a RingCapture with the schema's defaults filled in, as the API
// server would store it.
func defaulted(name string) *ringcapv1.RingCapture {
	return &ringcapv1.RingCapture{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "obs", Generation: 1},
		Spec: ringcapv1.RingCaptureSpec{
			Ring: ringcapv1.RingSpec{Key: "dada", BlockBytes: 524288, Blocks: 4, Readers: 1, HeaderBlockBytes: 4096},
			Receiver: ringcapv1.ReceiverSpec{
				QueuePairs: 4, Mode: ringcapv1.TransferModeSend, MemoryRegistration: ringcapv1.MemoryRegistrationAuto,
				Port: 18515, MetricsPort: 9100, MessageBytes: 65536, ReceiveDepth: 128,
				ResourceName: ringcapv1.DefaultResourceName, Stop: ringcapv1.StopSpec{After: ringcapv1.StopNever},
			},
		},
	}
}

func TestReceiverArgs(t *testing.T) {
	base := []string{"recv", "-k", "dada", "--create", "-b", "524288", "-n", "4", "-a", "4096", "-r", "1"}
	rx := []string{"--qps", "4", "--mode", "send", "--mr", "auto", "--transport", "verbs", "--listen", "0.0.0.0:18515", "--msg-bytes", "65536", "--rx-depth", "128"}
	withRx := func(transport ...string) []string { // rx with other transport flags
		return slices.Concat(rx[:6], transport, rx[8:])
	}
	tail := []string{"--metrics-addr", ":9100", "--summary-file", "/dev/termination-log"}
	cat := func(parts ...[]string) []string { return slices.Concat(parts...) }
	tests := []struct {
		name   string
		modify func(rc *ringcapv1.RingCapture)
		want   []string
	}{
		{"defaults", func(*ringcapv1.RingCapture) {}, cat(base, rx, tail)},
		{"key 0x prefix and upper case normalized", func(rc *ringcapv1.RingCapture) { rc.Spec.Ring.Key = "0xEADA" },
			cat([]string{"recv", "-k", "eada"}, base[3:], rx, tail)},
		{"lock, huge pages, write, whole ring, gid", func(rc *ringcapv1.RingCapture) {
			rc.Spec.Ring.LockMemory, rc.Spec.Ring.HugePages = true, true
			rc.Spec.Ring.BlockBytes = 4 << 20
			rc.Spec.Receiver.Mode, rc.Spec.Receiver.MemoryRegistration = ringcapv1.TransferModeWrite, ringcapv1.MemoryRegistrationWholeRing
			rc.Spec.Receiver.GIDIndex = ptr(int32(3))
			rc.Spec.Receiver.QueuePairs = 8
		}, cat([]string{"recv", "-k", "dada", "--create", "-b", "4194304", "-n", "4", "-a", "4096", "-r", "1", "-l", "--hugepages", "--hugepage-size", "2Mi",
			"--qps", "8", "--mode", "write", "--mr", "wholering", "--transport", "verbs", "--listen", "0.0.0.0:18515", "--msg-bytes", "65536", "--rx-depth", "128",
			"--gid-index", "3"}, tail)},
		{"transport OFI with a provider", func(rc *ringcapv1.RingCapture) {
			rc.Spec.Receiver.Transport, rc.Spec.Receiver.OFIProvider = ringcapv1.TransportOFI, "efa"
		}, cat(base, withRx("--transport", "ofi", "--ofi-provider", "efa"), tail)},
		{"transport OFI, provider chosen by the receiver", func(rc *ringcapv1.RingCapture) { rc.Spec.Receiver.Transport = ringcapv1.TransportOFI },
			cat(base, withRx("--transport", "ofi"), tail)},
		{"transport unset (stored before the field existed) is verbs", func(rc *ringcapv1.RingCapture) { rc.Spec.Receiver.Transport = "" },
			cat(base, rx, tail)},
		{"busy poll", func(rc *ringcapv1.RingCapture) { rc.Spec.Receiver.BusyPoll = true }, cat(base, rx, []string{"--busy-poll"}, tail)},
		{"stop after bytes", func(rc *ringcapv1.RingCapture) {
			rc.Spec.Receiver.Stop = ringcapv1.StopSpec{After: ringcapv1.StopBytes, Bytes: ptr(int64(1 << 30))}
		}, cat(base, rx, []string{"--stop-bytes", "1073741824"}, tail)},
		{"stop after duration", func(rc *ringcapv1.RingCapture) {
			rc.Spec.Receiver.Stop = ringcapv1.StopSpec{After: ringcapv1.StopDuration, Duration: &metav1.Duration{Duration: 90e9}}
		}, cat(base, rx, []string{"--stop-duration", "1m30s"}, tail)},
		{"stop after observations", func(rc *ringcapv1.RingCapture) {
			rc.Spec.Receiver.Stop = ringcapv1.StopSpec{After: ringcapv1.StopObservations, Observations: ptr(int32(2))}
		}, cat(base, rx, []string{"--stop-observations", "2"}, tail)},
		{"header values sorted, template as file", func(rc *ringcapv1.RingCapture) {
			rc.Spec.Ring.Header = &ringcapv1.RingHeaderSpec{Template: "TELESCOPE Parkes\n", Values: map[string]ringcapv1.HeaderValue{"SOURCE": "J0437-4715", "FREQ": "1400"}}
		}, cat(base, rx, []string{"--header-file", "/etc/ringcap/header/header", "--header", "FREQ=1400", "--header", "SOURCE=J0437-4715"}, tail)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := defaulted("c")
			tc.modify(rc)
			if got := ReceiverArgs(rc); !slices.Equal(got, tc.want) {
				t.Errorf("ReceiverArgs:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestBuildPod(t *testing.T) {
	rc := defaulted("pulsar")
	rc.Spec.Readers = []ringcapv1.ReaderContainer{{
		Name: "dbdisk", Image: "psrdada:1", Args: []string{"dada_dbdisk", "-k", "dada"},
		Env: []corev1.EnvVar{{Name: "X", Value: "1"}},
	}, {Name: "verify", Args: []string{"ring", "read", "-k", "dada"}}}
	rc.Spec.Ring.Readers = 2
	rc.Spec.NodeSelector = map[string]string{"ringcap.io/roce-v2": "true"}
	rc.Spec.Tolerations = []corev1.Toleration{{Key: "rdma", Operator: corev1.TolerationOpExists}}
	rc.Spec.PriorityClassName = "capture"
	opts := DefaultPodOptions()
	opts.ReceiverImage = "ringcap/ringcap:v1"
	opts.ImagePullPolicy = corev1.PullNever
	pod := BuildPod(rc, opts)

	if pod.Name != "pulsar-capture" || pod.Namespace != "obs" {
		t.Errorf("pod %s/%s, want obs/pulsar-capture", pod.Namespace, pod.Name)
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever || *pod.Spec.AutomountServiceAccountToken {
		t.Errorf("restartPolicy %s automount %v, want Never and false", pod.Spec.RestartPolicy, *pod.Spec.AutomountServiceAccountToken)
	}
	if pod.Spec.NodeSelector["ringcap.io/roce-v2"] != "true" || len(pod.Spec.Tolerations) != 1 || pod.Spec.PriorityClassName != "capture" {
		t.Errorf("placement not copied: %v %v %q", pod.Spec.NodeSelector, pod.Spec.Tolerations, pod.Spec.PriorityClassName)
	}
	if len(pod.Spec.Containers) != 3 {
		t.Fatalf("%d containers, want receiver + 2 readers", len(pod.Spec.Containers))
	}
	recv := pod.Spec.Containers[0]
	if recv.Name != "receiver" || recv.Image != "ringcap/ringcap:v1" || recv.ImagePullPolicy != corev1.PullNever {
		t.Errorf("receiver container %s image %s pull %s", recv.Name, recv.Image, recv.ImagePullPolicy)
	}
	if !slices.Equal(recv.Args, ReceiverArgs(rc)) || len(recv.Command) != 0 {
		t.Errorf("receiver command %q args %q, want the image entrypoint with ReceiverArgs", recv.Command, recv.Args)
	}
	sc := recv.SecurityContext
	if *sc.Privileged || *sc.AllowPrivilegeEscalation || !slices.Equal(sc.Capabilities.Add, []corev1.Capability{"IPC_LOCK"}) ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("receiver security context %+v, want unprivileged, drop ALL, add IPC_LOCK", sc)
	}
	ringBytes := int64(4*524288 + 8*4096)
	wantMem := resource.MustParse("256Mi")
	wantMem.Add(*resource.NewQuantity(ringBytes, resource.BinarySI))
	for name, list := range map[string]corev1.ResourceList{"requests": recv.Resources.Requests, "limits": recv.Resources.Limits} {
		if q := list[corev1.ResourceMemory]; q.Cmp(wantMem) != 0 {
			t.Errorf("receiver memory %s = %s, want 256Mi + ring %d bytes = %s", name, q.String(), ringBytes, wantMem.String())
		}
		if q := list["ringcap.io/rdma"]; q.Value() != 1 {
			t.Errorf("receiver ringcap.io/rdma %s = %s, want 1", name, q.String())
		}
		if _, ok := list["hugepages-2Mi"]; ok {
			t.Errorf("hugepages-2Mi %s without ring.hugePages", name)
		}
	}
	if recv.TerminationMessagePath != "/dev/termination-log" {
		t.Errorf("termination message path %q", recv.TerminationMessagePath)
	}
	rd := pod.Spec.Containers[1]
	if rd.Name != "dbdisk" || rd.Image != "psrdada:1" || rd.Env[0].Name != EnvRingKey || rd.Env[0].Value != "dada" || rd.Env[1].Name != "X" {
		t.Errorf("reader container %+v", rd)
	}
	if rd.SecurityContext.Capabilities.Add != nil || *rd.SecurityContext.Privileged {
		t.Errorf("reader security context %+v, want no added capabilities", rd.SecurityContext)
	}
	if pod.Spec.Containers[2].Image != "ringcap/ringcap:v1" {
		t.Errorf("reader without image got %q, want the receiver image", pod.Spec.Containers[2].Image)
	}
	if pod.Annotations[AnnotationGeneration] != "1" {
		t.Errorf("generation annotation %q", pod.Annotations[AnnotationGeneration])
	}
}

func TestBuildPodHugePagesAndOverrides(t *testing.T) {
	rc := defaulted("huge")
	rc.Spec.Ring.HugePages = true
	rc.Spec.Ring.BlockBytes = 2 << 20
	rc.Spec.Ring.Blocks = 8
	rc.Spec.Receiver.ResourceName = "example.com/roce"
	rc.Spec.Receiver.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi"),
	}}
	rc.Spec.Images = ringcapv1.ImagesSpec{Receiver: "mirror/ringcap:x", PullPolicy: corev1.PullAlways}
	pod := BuildPod(rc, DefaultPodOptions())
	recv := pod.Spec.Containers[0]
	// 8 x 2 MiB data blocks; the 8 header blocks of 4096 bytes are in ordinary memory.
	wantHuge := resource.MustParse("16Mi")
	if q := recv.Resources.Limits["hugepages-2Mi"]; q.Cmp(wantHuge) != 0 {
		t.Errorf("hugepages-2Mi limit %s, want %s", q.String(), wantHuge.String())
	}
	if q := recv.Resources.Requests[corev1.ResourceMemory]; q.Cmp(resource.MustParse("1048608Ki")) != 0 {
		t.Errorf("memory request %s, want the user's 1Gi and the header blocks' 32 KiB (the data blocks are in huge pages)", q.String())
	}
	if q := recv.Resources.Requests[corev1.ResourceCPU]; q.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("cpu request %s, want 2", q.String())
	}
	if q := recv.Resources.Limits["example.com/roce"]; q.Value() != 1 {
		t.Errorf("custom RDMA resource limit %s, want 1", q.String())
	}
	if recv.Image != "mirror/ringcap:x" || recv.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("image override: %s %s", recv.Image, recv.ImagePullPolicy)
	}
}

func TestBuildPodHeaderSources(t *testing.T) {
	rc := defaulted("hdr")
	rc.Spec.Ring.Header = &ringcapv1.RingHeaderSpec{Template: "HDR_VERSION 1.0\nTELESCOPE Parkes\n"}
	pod := BuildPod(rc, DefaultPodOptions())
	if pod.Annotations[AnnotationHeaderTemplate] != rc.Spec.Ring.Header.Template {
		t.Errorf("template annotation %q", pod.Annotations[AnnotationHeaderTemplate])
	}
	if len(pod.Spec.Volumes) != 1 || pod.Spec.Volumes[0].DownwardAPI == nil ||
		!strings.Contains(pod.Spec.Volumes[0].DownwardAPI.Items[0].FieldRef.FieldPath, AnnotationHeaderTemplate) {
		t.Errorf("want a downward API volume of the template annotation, got %+v", pod.Spec.Volumes)
	}

	rc.Spec.Ring.Header = &ringcapv1.RingHeaderSpec{ConfigMapRef: &ringcapv1.ConfigMapKeyReference{Name: "hdr", Key: "psr.hdr"}}
	pod = BuildPod(rc, DefaultPodOptions())
	v := pod.Spec.Volumes[0]
	if v.ConfigMap == nil || v.ConfigMap.Name != "hdr" || v.ConfigMap.Items[0].Key != "psr.hdr" || v.ConfigMap.Items[0].Path != "header" {
		t.Errorf("want a ConfigMap volume hdr/psr.hdr -> header, got %+v", v)
	}
	if _, ok := pod.Annotations[AnnotationHeaderTemplate]; ok {
		t.Errorf("template annotation set for a ConfigMap header")
	}
	if m := pod.Spec.Containers[0].VolumeMounts; len(m) != 1 || m[0].MountPath != "/etc/ringcap/header" {
		t.Errorf("receiver mounts %+v", m)
	}
}

func TestPodName(t *testing.T) {
	long := strings.Repeat("a", 70)
	tests := []struct{ in, want string }{
		{"x", "x-capture"},
		{strings.Repeat("b", 55), strings.Repeat("b", 55) + "-capture"},
	}
	for _, tc := range tests {
		if got := PodName(tc.in); got != tc.want {
			t.Errorf("PodName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	got := PodName(long)
	if len(got) > 63 || !strings.HasSuffix(got, "-capture") || got == PodName(long+"a") {
		t.Errorf("PodName(70 chars) = %q: want <= 63 characters, unique per name", got)
	}
}
