package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

const (
	// headerRingBlocks is the depth of the header ring dada_db creates (IPCBUF_XFERS).
	headerRingBlocks = 8
	// hugePageBytes is the size of one 2 MiB huge page.
	hugePageBytes = 2 << 20

	// LabelCapture carries the RingCapture's name on its pod (truncated to a label value
	// when longer; the controller reference is what identifies the owner).
	LabelCapture = "ringcap.io/capture"
	// AnnotationGeneration records the RingCapture generation a pod was built from.
	AnnotationGeneration = "ringcap.io/generation"
	// AnnotationHeaderTemplate carries an inline header template into the pod, where a
	// downward-API volume turns it into the file the receiver reads (no ConfigMap to
	// create, so no extra RBAC).
	AnnotationHeaderTemplate = "ringcap.io/header-template"

	headerVolume    = "ringcap-header"
	headerMountPath = "/etc/ringcap/header"
	headerFileName  = "header"
	// summaryFile is where the receiver writes its final status JSON: the container's
	// termination message, so the last numbers reach the operator through the pod's
	// status even when the pod is gone from the network.
	summaryFile = "/dev/termination-log"
	// LabelManagedBy and ManagedByValue mark the pods the operator creates; its pod
	// cache holds only those.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByValue = "ringcap-operator"
	// EnvRingKey is set in every reader container to the ring's key.
	EnvRingKey = "RINGCAP_RING_KEY"
)

// PodOptions are the operator-wide settings BuildPod uses where a RingCapture says nothing.
type PodOptions struct {
	// ReceiverImage is the default receiver (and reader) image.
	ReceiverImage string
	// ImagePullPolicy is the default pull policy ("" leaves the cluster default).
	ImagePullPolicy corev1.PullPolicy
	// ReceiverMemory is the receiver process's own memory, added to the ring's bytes
	// when the RingCapture does not set receiver.resources.requests.memory.
	ReceiverMemory resource.Quantity
	// IPCLock is the receiver's IPC_LOCK, decided per pod (DecideIPCLock); nil grants it.
	IPCLock *IPCLockDecision
}

// receiverUID is the user the receiver runs as: the ringcap image's user ringcap.
const receiverUID = 65532

// DefaultPodOptions returns the defaults of the operator's flags.
func DefaultPodOptions() PodOptions {
	return PodOptions{ReceiverImage: "ringcap/ringcap:latest", ReceiverMemory: resource.MustParse("256Mi")}
}

// PodName is the name of a RingCapture's pod: the capture's name with a "-capture"
// suffix, shortened with a hash when that would exceed 63 characters (so it is also a
// valid host name).
func PodName(rcName string) string {
	const suffix = "-capture"
	if len(rcName)+len(suffix) <= 63 {
		return rcName + suffix
	}
	sum := sha256.Sum256([]byte(rcName))
	return strings.TrimRight(rcName[:63-len(suffix)-9], "-.") + "-" + hex.EncodeToString(sum[:])[:8] + suffix
}

// NormalizeKey returns a ring key as the ringcap CLI prints it: lower-case hex, no 0x.
func NormalizeKey(key string) string {
	k := strings.TrimPrefix(strings.ToLower(key), "0x")
	if k == "" {
		return "dada"
	}
	return k
}

// RingBytes returns the shared memory the ring takes: the data ring and the 8-block
// header ring.
func RingBytes(r ringcapv1.RingSpec) int64 {
	return r.Blocks*r.BlockBytes + headerRingBlocks*r.HeaderBlockBytes
}

// HugePageBytes returns the hugepages-2Mi the ring needs when it uses huge pages: each
// data block rounded up to whole 2 MiB pages (the header blocks are in ordinary memory).
func HugePageBytes(r ringcapv1.RingSpec) int64 {
	return r.Blocks * ((r.BlockBytes + hugePageBytes - 1) / hugePageBytes * hugePageBytes)
}

// ReceiverArgs builds the `ringcap recv` arguments for a RingCapture (after the image's
// ringcap entrypoint). The receiver creates the ring (--create) in the pod's IPC
// namespace and destroys it on exit; the ring disappears with the pod in any case.
// An RDMA capture gets its queue pairs, transport and listen address; a SPEAD or VDIF
// capture its protocol, UDP sockets and placement rule (packetArgs).
func ReceiverArgs(rc *ringcapv1.RingCapture) []string {
	r, rx := rc.Spec.Ring, rc.Spec.Receiver
	args := ringArgs(r)
	if rx.Protocol.IsPacket() {
		args = append(args, packetArgs(rc)...) // packet.go
	} else {
		args = append(args, rdmaArgs(rc)...)
	}
	args = append(args, headerArgs(r.Header)...)
	args = append(args, stopArgs(rx.Stop)...)
	return append(args,
		"--metrics-addr", metricsAddr(rc),
		"--summary-file", summaryFile,
	)
}

func i64(n int64) string { return strconv.FormatInt(n, 10) }

// ringArgs create the ring: key, geometry, locking and huge pages.
func ringArgs(r ringcapv1.RingSpec) []string {
	args := []string{"recv",
		"-k", NormalizeKey(r.Key), "--create",
		"-b", i64(r.BlockBytes), "-n", i64(r.Blocks), "-a", i64(r.HeaderBlockBytes), "-r", i64(int64(r.Readers)),
	}
	if r.LockMemory {
		args = append(args, "-l")
	}
	if r.HugePages {
		// The size the pod requests (hugepages-2Mi), whatever the node's default size.
		args = append(args, "--hugepages", "--hugepage-size", "2Mi")
	}
	return args
}

// rdmaArgs are an RDMA receiver's queue pairs, transfer mode, registration,
// transport, listen address and message sizes.
func rdmaArgs(rc *ringcapv1.RingCapture) []string {
	rx := rc.Spec.Receiver
	args := []string{
		"--qps", i64(int64(rx.QueuePairs)),
		"--mode", strings.ToLower(string(rx.Mode)),
		"--mr", strings.ToLower(string(rx.MemoryRegistration)),
	}
	args = append(args, transportArgs(rx)...)
	args = append(args, listenArgs(rc)...)
	args = append(args,
		"--msg-bytes", i64(rx.MessageBytes),
		"--rx-depth", i64(int64(rx.ReceiveDepth)),
	)
	if rx.GIDIndex != nil {
		args = append(args, "--gid-index", i64(int64(*rx.GIDIndex)))
	}
	if rx.BusyPoll {
		args = append(args, "--busy-poll")
	}
	return args
}

// headerArgs are the header template file and the header values, by key.
func headerArgs(h *ringcapv1.RingHeaderSpec) []string {
	if h == nil {
		return nil
	}
	var args []string
	if h.Template != "" || h.ConfigMapRef != nil {
		args = append(args, "--header-file", headerMountPath+"/"+headerFileName)
	}
	keys := make([]string, 0, len(h.Values))
	for k := range h.Values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--header", k+"="+string(h.Values[k]))
	}
	return args
}

// stopArgs are the receiver's stop condition.
func stopArgs(st ringcapv1.StopSpec) []string {
	switch st.After {
	case ringcapv1.StopBytes:
		if st.Bytes != nil {
			return []string{"--stop-bytes", i64(*st.Bytes)}
		}
	case ringcapv1.StopDuration:
		if st.Duration != nil {
			return []string{"--stop-duration", st.Duration.Duration.String()}
		}
	case ringcapv1.StopObservations:
		if st.Observations != nil {
			return []string{"--stop-observations", i64(int64(*st.Observations))}
		}
	}
	return nil
}

// transportArgs are the receiver's transport flags: always --transport (so that the
// spec, not the device plugin's RINGCAP_TRANSPORT, decides), and the libfabric provider
// when one was given.
func transportArgs(rx ringcapv1.ReceiverSpec) []string {
	t := rx.Transport
	if t == "" {
		t = ringcapv1.TransportVerbs
	}
	args := []string{"--transport", strings.ToLower(string(t))}
	if t == ringcapv1.TransportOFI && rx.OFIProvider != "" {
		args = append(args, "--ofi-provider", rx.OFIProvider)
	}
	return args
}

// receiverResources returns the receiver's resources: the user's (or the default
// process memory), plus the ring's bytes in memory or hugepages-2Mi, plus one unit of
// the RDMA resource unless the device comes through a claim. Requests equal limits for memory, huge pages and the RDMA resource
// (required for huge pages and extended resources, and it keeps a capture from being
// the first evicted under memory pressure).
func receiverResources(rc *ringcapv1.RingCapture, opts PodOptions) corev1.ResourceRequirements {
	user := rc.Spec.Receiver.Resources
	res := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for k, v := range user.Requests {
		res.Requests[k] = v.DeepCopy()
	}
	for k, v := range user.Limits {
		res.Limits[k] = v.DeepCopy()
	}
	mem := opts.ReceiverMemory.DeepCopy()
	if m, ok := user.Requests[corev1.ResourceMemory]; ok {
		mem = m.DeepCopy()
	}
	ring := rc.Spec.Ring
	if ring.HugePages {
		huge := *resource.NewQuantity(HugePageBytes(ring), resource.BinarySI)
		res.Requests[corev1.ResourceHugePagesPrefix+"2Mi"] = huge
		res.Limits[corev1.ResourceHugePagesPrefix+"2Mi"] = huge.DeepCopy()
		mem.Add(*resource.NewQuantity(headerRingBlocks*ring.HeaderBlockBytes, resource.BinarySI))
	} else {
		mem.Add(*resource.NewQuantity(RingBytes(ring), resource.BinarySI))
	}
	mem.Add(*resource.NewQuantity(PresenceRingBytes(rc), resource.BinarySI))
	res.Requests[corev1.ResourceMemory] = mem
	res.Limits[corev1.ResourceMemory] = mem.DeepCopy()

	if usesClaim(rc.Spec.Receiver) {
		return res // the device comes through the pod's resource claim
	}
	if rc.Spec.Receiver.Protocol.IsPacket() {
		return res // a SPEAD or VDIF receiver takes UDP packets: no RDMA device
	}
	rdma := corev1.ResourceName(rc.Spec.Receiver.ResourceName)
	if rdma == "" {
		rdma = ringcapv1.DefaultResourceName
	}
	res.Requests[rdma] = resource.MustParse("1")
	res.Limits[rdma] = resource.MustParse("1")
	return res
}

// BuildPod returns the capture pod of a RingCapture: the receiver container and the
// reader containers in one pod (one IPC namespace, so the readers see the ring the
// receiver creates; the node's when ring.hostIPC is set), restartPolicy Never, no service account token, not privileged,
// RuntimeDefault seccomp; the receiver runs as non-root and gets IPC_LOCK (to register
// the ring with the RDMA device beyond RLIMIT_MEMLOCK) when opts.IPCLock grants it, and
// nothing else. The controller reference is set by the caller.
func BuildPod(rc *ringcapv1.RingCapture, opts PodOptions) *corev1.Pod {
	spec := rc.Spec
	image := opts.ReceiverImage
	if spec.Images.Receiver != "" {
		image = spec.Images.Receiver
	}
	pull := opts.ImagePullPolicy
	if spec.Images.PullPolicy != "" {
		pull = spec.Images.PullPolicy
	}
	lock := ipcLockOf(opts)
	receiver := receiverContainer(rc, opts, image, pull, lock)
	annotations := map[string]string{AnnotationGeneration: strconv.FormatInt(rc.Generation, 10), AnnotationIPCLock: lock.Reason,
		// for a Prometheus that discovers pods by annotation (the chart's PodMonitor selects by label)
		"prometheus.io/scrape": "true", "prometheus.io/port": strconv.Itoa(int(spec.Receiver.MetricsPort)), "prometheus.io/path": "/metrics"}
	var volumes []corev1.Volume
	if vol, ok := headerVolumeOf(spec.Ring.Header, annotations); ok {
		volumes = append(volumes, vol)
		receiver.VolumeMounts = append(receiver.VolumeMounts, corev1.VolumeMount{Name: headerVolume, MountPath: headerMountPath, ReadOnly: true})
	}
	volumes = append(volumes, podVolumes(spec.Volumes)...)
	readers, sidecars := splitReaders(readerContainers(spec.Readers, readerEnv(spec), image, pull), spec.Readers)
	containers := append([]corev1.Container{receiver}, readers...)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      PodName(rc.Name),
			Namespace: rc.Namespace,
			Labels: map[string]string{
				"app.kubernetes.io/name":      "ringcap",
				"app.kubernetes.io/component": "capture",
				LabelManagedBy:                ManagedByValue,
				LabelCapture:                  labelValue(rc.Name),
			},
			Annotations: annotations,
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			HostIPC:                       spec.Ring.HostIPC,
			AutomountServiceAccountToken:  ptr(false),
			EnableServiceLinks:            ptr(false),
			TerminationGracePeriodSeconds: ptr(int64(30)),
			InitContainers:                sidecars,
			Containers:                    containers,
			Volumes:                       volumes,
			NodeSelector:                  copyMap(spec.NodeSelector),
			Affinity:                      spec.Affinity.DeepCopy(),
			Tolerations:                   append([]corev1.Toleration(nil), spec.Tolerations...),
			PriorityClassName:             spec.PriorityClassName,
			SecurityContext:               podSecurity(spec.Ring, lock),
		},
	}
	applyNetwork(rc, pod)
	applyClaim(rc, pod)
	return pod
}

// receiverContainer is the receiver: ringcap recv with its ports, identity,
// resources, summary as termination message, IPC_LOCK alone, and a readiness
// probe on /status.
func receiverContainer(rc *ringcapv1.RingCapture, opts PodOptions, image string, pull corev1.PullPolicy, lock IPCLockDecision) corev1.Container {
	spec := rc.Spec
	return corev1.Container{
		Name:            ringcapv1.ReceiverContainerName,
		Image:           image,
		ImagePullPolicy: pull,
		Args:            ReceiverArgs(rc),
		Ports:           receiverPorts(spec.Receiver),
		Env: []corev1.EnvVar{
			{Name: "RINGCAP_CAPTURE", Value: rc.Namespace + "/" + rc.Name},
			{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		},
		Resources:                receiverResources(rc, opts),
		TerminationMessagePath:   summaryFile,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext: &corev1.SecurityContext{
			Privileged:               ptr(false),
			AllowPrivilegeEscalation: ptr(false),
			RunAsNonRoot:             ptr(true),
			RunAsUser:                ptr(int64(receiverUID)),
			RunAsGroup:               ptr(int64(receiverUID)),
			Capabilities: &corev1.Capabilities{
				Drop: []corev1.Capability{"ALL"},
				Add:  lock.capabilities(),
			},
		},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: "/status", Port: intstr.FromString("metrics"),
			}},
			PeriodSeconds: 5,
		},
	}
}

// headerVolumeOf is the volume that holds the header template (from a
// ConfigMap, or from the spec's template through an annotation it adds), if
// the spec gives one.
func headerVolumeOf(h *ringcapv1.RingHeaderSpec, annotations map[string]string) (corev1.Volume, bool) {
	if h == nil || (h.Template == "" && h.ConfigMapRef == nil) {
		return corev1.Volume{}, false
	}
	vol := corev1.Volume{Name: headerVolume}
	if h.ConfigMapRef != nil {
		key := h.ConfigMapRef.Key
		if key == "" {
			key = headerFileName
		}
		vol.ConfigMap = &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: h.ConfigMapRef.Name},
			Items:                []corev1.KeyToPath{{Key: key, Path: headerFileName}},
		}
		return vol, true
	}
	annotations[AnnotationHeaderTemplate] = h.Template
	vol.DownwardAPI = &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{
		Path:     headerFileName,
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + AnnotationHeaderTemplate + "']"},
	}}}
	return vol, true
}

// deepCopyMounts copies a reader's volume mounts into its container.
func deepCopyMounts(ms []corev1.VolumeMount) []corev1.VolumeMount {
	var out []corev1.VolumeMount
	for i := range ms {
		out = append(out, *ms[i].DeepCopy())
	}
	return out
}

// readerContainers are the reader containers, each told the ring key
// (RINGCAP_RING_KEY, and RINGCAP_PRESENCE_KEY with a presence ring: env),
// unprivileged, with no capabilities, with its volume mounts.
func readerContainers(readers []ringcapv1.ReaderContainer, base []corev1.EnvVar, image string, pull corev1.PullPolicy) []corev1.Container {
	var out []corev1.Container
	for _, rd := range readers {
		img := rd.Image
		if img == "" {
			img = image
		}
		env := append(append([]corev1.EnvVar{}, base...), rd.Env...)
		out = append(out, corev1.Container{
			Name:            rd.Name,
			Image:           img,
			ImagePullPolicy: pull,
			Command:         rd.Command,
			Args:            rd.Args,
			Env:             env,
			Resources:       *rd.Resources.DeepCopy(),
			VolumeMounts:    deepCopyMounts(rd.VolumeMounts),
			// A reader that fails without writing /dev/termination-log leaves the end
			// of its log as its termination message, which the Failed condition shows.
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			SecurityContext:          readerSecurity(rd),
		})
	}
	return out
}

// readerSecurity is a reader's security context: unprivileged, no capabilities, as the
// user and group the spec gives (non-root when that user is not 0).
func readerSecurity(rd ringcapv1.ReaderContainer) *corev1.SecurityContext {
	sc := &corev1.SecurityContext{
		Privileged:               ptr(false),
		AllowPrivilegeEscalation: ptr(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		RunAsUser:                rd.RunAsUser,
		RunAsGroup:               rd.RunAsGroup,
	}
	if rd.RunAsUser != nil && *rd.RunAsUser != 0 {
		sc.RunAsNonRoot = ptr(true)
	}
	return sc
}

// capabilities are what the decision adds to the receiver: IPC_LOCK or nothing.
func (d IPCLockDecision) capabilities() []corev1.Capability {
	if !d.Grant {
		return nil
	}
	return []corev1.Capability{"IPC_LOCK"}
}

// ipcLockOf is the pod's IPC_LOCK decision (granted when none was made).
func ipcLockOf(opts PodOptions) IPCLockDecision {
	if opts.IPCLock == nil {
		return IPCLockDecision{Grant: true}
	}
	return *opts.IPCLock
}

// podSecurity is the pod's security context: the runtime's default seccomp profile, and
// group 0 for a huge-page ring without IPC_LOCK (the kernel lets the group
// vm.hugetlb_shm_group, 0 by default, create huge-page shared memory).
func podSecurity(ring ringcapv1.RingSpec, lock IPCLockDecision) *corev1.PodSecurityContext {
	sc := &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	if ring.HugePages && !lock.Grant {
		sc.SupplementalGroups = []int64{0}
	}
	return sc
}

// externalReaderSlots returns how many of a ring's reader slots the pod's reader
// containers leave to readers outside the pod: 0 unless the pod runs in the node's IPC
// namespace (ring.hostIPC), the only way such readers can reach the ring.
func externalReaderSlots(pod *corev1.Pod, slots int) int {
	if pod == nil || !pod.Spec.HostIPC {
		return 0
	}
	readers := sidecarReaders(pod)
	for _, c := range pod.Spec.Containers {
		if c.Name != ringcapv1.ReceiverContainerName {
			readers++
		}
	}
	return max(slots-readers, 0)
}

// externalReadersNote is the part of the RingReady message that says which reader slots
// wait for readers outside the pod ("" when none do).
func externalReadersNote(pod *corev1.Pod, slots int) string {
	switch n := externalReaderSlots(pod, slots); n {
	case 0:
		return ""
	case 1:
		return "; 1 reader slot is left for a reader outside the pod (hostIPC: the ring is in the node's IPC namespace)"
	default:
		return fmt.Sprintf("; %d reader slots are left for readers outside the pod (hostIPC: the ring is in the node's IPC namespace)", n)
	}
}

// labelValue fits a name into a label value (63 characters).
func labelValue(s string) string {
	if len(s) <= 63 {
		return s
	}
	return strings.TrimRight(s[:63], "-_.")
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// podGeneration returns the RingCapture generation a pod was built from (0 if unknown).
func podGeneration(pod *corev1.Pod) int64 {
	g, err := strconv.ParseInt(pod.Annotations[AnnotationGeneration], 10, 64)
	if err != nil {
		return 0
	}
	return g
}

// describeResources is a one-line summary of what a pod requests, for events.
func describeResources(pod *corev1.Pod) string {
	var parts []string
	for _, c := range pod.Spec.Containers {
		if c.Name != ringcapv1.ReceiverContainerName {
			continue
		}
		names := make([]string, 0, len(c.Resources.Requests))
		for n := range c.Resources.Requests {
			names = append(names, string(n))
		}
		sort.Strings(names)
		for _, n := range names {
			q := c.Resources.Requests[corev1.ResourceName(n)]
			parts = append(parts, fmt.Sprintf("%s=%s", n, q.String()))
		}
	}
	if t := podClaimTemplate(pod); t != "" {
		parts = append(parts, "and an RDMA device claimed from ResourceClaimTemplate "+t)
	}
	return strings.Join(parts, " ")
}
