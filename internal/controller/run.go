package controller

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

// A run is one capture pod: it is built from one generation of the RingCapture's spec
// and runs until it succeeds or fails. A spec change while a pod runs does not touch
// that pod: it is held as pending (condition ChangePending, status.running still shows
// the pod's configuration) and applied in a new pod once the status has recorded the
// finished run, which then moves to status.lastRun.

// RunningConfig returns the configuration a capture pod runs with, read from the
// receiver container's arguments (what the pod was built with, whatever the spec says
// now) and refined by the receiver's own report when there is one. Nil without a pod.
func RunningConfig(pod *corev1.Pod, rs *statusdoc.Status) *ringcapv1.RunningStatus {
	if pod == nil {
		return nil
	}
	var args []string
	for _, c := range pod.Spec.Containers {
		if c.Name == ringcapv1.ReceiverContainerName {
			args = c.Args
		}
	}
	run := configFromArgs(podGeneration(pod), args)
	run.DeviceClaimTemplate = podClaimTemplate(pod)
	run.DeviceClaim, _ = podDeviceClaim(pod)
	run.IPCLock = runningIPCLock(pod)
	if isPacketRun(run) {
		if pod.Spec.HostNetwork {
			run.Network = string(ringcapv1.NetworkModeHost) // packet.go: no --listen-on without an RDMA device
		}
		return run
	}
	run.Transport, run.OFIProvider, run.TransportSource = runningTransport(run.Transport, run.OFIProvider, rs)
	if rs != nil {
		if rs.QueuePairs > 0 {
			run.QueuePairs = apiInt32(rs.QueuePairs)
		}
		if rs.TransferMode != "" {
			run.Mode = modeName(rs.TransferMode)
		}
	}
	return run
}

// configFromArgs reads a configuration from `ringcap recv` arguments as ReceiverArgs
// builds them.
func configFromArgs(gen int64, args []string) *ringcapv1.RunningStatus {
	flag := func(name string) string {
		for i := 0; i+1 < len(args); i++ {
			if args[i] == name {
				return args[i+1]
			}
		}
		return ""
	}
	i64 := func(name string) int64 {
		n, _ := strconv.ParseInt(flag(name), 10, 64)
		return n
	}
	run := &ringcapv1.RunningStatus{Generation: gen, RingKey: flag("-k"),
		BlockBytes: i64("-b"), Blocks: i64("-n"), Readers: int32(i64("-r")),
		QueuePairs: int32(i64("--qps")), Mode: modeName(flag("--mode")), MessageBytes: i64("--msg-bytes"),
	}
	if l := flag("--listen"); l != "" {
		p, _ := strconv.ParseInt(l[strings.LastIndex(l, ":")+1:], 10, 32)
		run.Port = int32(p)
	}
	run.Transport, run.OFIProvider = transportName(flag("--transport")), flag("--ofi-provider")
	run.Network, run.AllowedSenders = networkFromArgs(flag)
	run.Protocol = protocolName(flag("--protocol"))
	if isPacketRun(run) {
		run.Transport, run.Port = "", 0 // UDP sockets: no RDMA transport, no handshake
	}
	run.Stop = "never"
	for _, s := range []struct{ flag, unit string }{{"--stop-bytes", "bytes"}, {"--stop-duration", ""}, {"--stop-observations", "observations"}} {
		if v := flag(s.flag); v != "" {
			run.Stop = strings.TrimSpace("after " + v + " " + s.unit)
		}
	}
	return run
}

// Where status.running.transport comes from (transportSource).
const (
	transportFromReceiver = "reported by the receiver"
	transportFromArgs     = "from the receiver's arguments: the receiver has not reported its transport"
)

// runningTransport is the transport and libfabric provider the receiver runs, and where
// that comes from: the receiver's report when it has one, else its arguments (argT and
// argProvider, as configFromArgs read them).
func runningTransport(argT, argProvider string, rs *statusdoc.Status) (transport, provider, source string) {
	if rs != nil && rs.Transport != "" {
		return transportName(rs.Transport), rs.Provider, transportFromReceiver
	}
	source = transportFromArgs
	if argT == string(ringcapv1.TransportOFI) && argProvider == "" {
		source += "; no provider was given: the device plugin's (RINGCAP_OFI_PROVIDER) or libfabric's first"
	}
	return argT, argProvider, source
}

// transportName turns the CLI's transport ("ofi") into the API's ("OFI"); a pod without
// --transport (built before there was a choice) runs Verbs.
func transportName(t string) string {
	switch strings.ToLower(t) {
	case "", "verbs":
		return string(ringcapv1.TransportVerbs)
	case "ofi":
		return string(ringcapv1.TransportOFI)
	}
	return t
}

// modeName turns the CLI's mode ("send") into the API's ("Send").
func modeName(m string) string {
	if m == "" {
		return ""
	}
	return strings.ToUpper(m[:1]) + strings.ToLower(m[1:])
}

// pendingChange says what of the spec is not running yet, "" when the running pod
// was built from the current generation (or there is no pod to compare with).
func pendingChange(rc *ringcapv1.RingCapture, run *ringcapv1.RunningStatus) string {
	if run == nil || run.Generation == rc.Generation {
		return ""
	}
	want := configFromArgs(rc.Generation, ReceiverArgs(rc))
	if isPacketRun(want) && networkMode(rc) == ringcapv1.NetworkModeHost {
		want.Network = string(ringcapv1.NetworkModeHost) // as RunningConfig reads it from the pod
	}
	var diffs []string
	add := func(field string, have, wanted any) {
		if fmt.Sprint(have) != fmt.Sprint(wanted) {
			diffs = append(diffs, fmt.Sprintf("%s %v -> %v", field, have, wanted))
		}
	}
	add("ring key", run.RingKey, want.RingKey)
	add("ring blockBytes", run.BlockBytes, want.BlockBytes)
	add("ring blocks", run.Blocks, want.Blocks)
	add("ring readers", run.Readers, want.Readers)
	add("receiver protocol", run.Protocol, want.Protocol)
	add("receiver queuePairs", run.QueuePairs, want.QueuePairs)
	add("receiver mode", run.Mode, want.Mode)
	add("receiver transport", run.Transport, want.Transport)
	if want.OFIProvider != "" { // else the receiver chooses one
		add("receiver ofiProvider", run.OFIProvider, want.OFIProvider)
	}
	add("receiver messageBytes", run.MessageBytes, want.MessageBytes)
	add("receiver port", run.Port, want.Port)
	add("receiver stop", run.Stop, want.Stop)
	add("network", run.Network, want.Network)
	add("network allowedSenders", run.AllowedSenders, want.AllowedSenders)
	add("receiver device", deviceSource(run.DeviceClaimTemplate), deviceSource(podTemplateName(rc)))
	what := "changes"
	if len(diffs) > 0 {
		what = "changes " + strings.Join(diffs, ", ")
	}
	return fmt.Sprintf("spec generation %d %s; the pod runs generation %d until its run ends, then a new pod applies the change",
		rc.Generation, what, run.Generation)
}

// isNewRun says whether pod is a run other than the one old describes: a pod built from
// another generation than status.running.
func isNewRun(old ringcapv1.RingCaptureStatus, pod *corev1.Pod) bool {
	return pod != nil && pod.DeletionTimestamp == nil && old.Running != nil && old.Running.Generation != podGeneration(pod)
}

// newRunStatus is the status a new run starts from: the previous run's summary in
// lastRun (when it ended) and nothing of its numbers.
func newRunStatus(old ringcapv1.RingCaptureStatus) ringcapv1.RingCaptureStatus {
	st := ringcapv1.RingCaptureStatus{
		ObservedGeneration: old.ObservedGeneration,
		Phase:              ringcapv1.PhasePending,
		Conditions:         old.Conditions,
		LastRun:            old.LastRun,
		Restarts:           old.Restarts, // the capture's count, not the run's
	}
	if s := runSummary(old); s != nil {
		st.LastRun = s
	}
	return st
}

// runSummary is what a finished run leaves in lastRun (nil when st is not a finished run).
func runSummary(st ringcapv1.RingCaptureStatus) *ringcapv1.RunSummary {
	if !isTerminal(st.Phase) {
		return nil
	}
	s := &ringcapv1.RunSummary{
		Phase: st.Phase, BytesReceived: st.BytesReceived, Observations: st.Observations,
		StartTime: st.StartTime.DeepCopy(), CompletionTime: st.CompletionTime.DeepCopy(),
	}
	if st.Running != nil {
		s.Generation = st.Running.Generation
	}
	if c := apimeta.FindStatusCondition(st.Conditions, ringcapv1.ConditionFailed); c != nil && c.Status == "True" {
		s.Reason, s.Message = c.Reason, c.Message
	} else {
		s.Message = fmt.Sprintf("received %s in %d observations", HumanBytes(st.BytesReceived), st.Observations)
	}
	return s
}

// deviceSource names where a pod's RDMA device comes from, for the ChangePending message.
func deviceSource(claimTemplate string) string {
	if claimTemplate == "" {
		return "the device plugin's extended resource"
	}
	return "a claim from ResourceClaimTemplate " + claimTemplate
}
