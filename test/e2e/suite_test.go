//go:build e2e

package e2e

import "testing"

// TestRingcap runs the steps of issue 7 in order on one cluster; a failed step stops the rest,
// since each builds on the state the previous one left.
func TestRingcap(t *testing.T) {
	steps := []struct {
		name string
		fn   func(*testing.T)
	}{
		{"1-helm-install-plugin-registers", stepInstall},
		{"2-sample-capture-ready", stepCapture},
		{"3-stream-verified", stepStream},
		{"4-invalid-rejected", stepInvalid},
		{"4a-failed-reader-stops-pod", stepFailedReader},
		{"4c-reader-exit-0-fails-capture", stepReaderExitZero},
		{"4d-killed-reader-restarts-and-resumes", stepReaderRestartResumes},
		{"4b-edit-running-capture", stepEditRunning},
		{"5-kubelet-and-operator-restart", stepRestarts},
		{"6-delete-leaves-nothing", stepDelete},
		{"7-readers-behind-reported", stepReadersBehind},
		{"8-host-network-senders-outside", stepHostNetwork},
		{"9-dra-claim-selects-rxe1", stepDRAClaim},
		{"9a-both-offers-each-device-once", stepBothDisjoint},
		{"9b-dra-driver-observable", stepDRADriverObservable},
		{"10-dra-claimed-capture-streams", stepDRACapture},
		{"11-dra-port-down-leaves-slice", stepDRAPortDown},
		{"11a-dra-port-down-pod-told-unhealthy", stepDRAPortHealth},
		{"11b-device-plugin-mode-restored", stepDevicePluginRestored},
		{"12-ofi-verbs-capture-verified", stepOFICapture},
		{"13-refused-pod-recovers", stepRefusedPod},
		{"14-edit-replaces-unstarted-pod", stepEditUnstarted},
		{"15-start-deadline-frees-unit", stepStartDeadline},
		{"16-pod-deleted-mid-run-restarts", stepPodDeleted},
		{"17-pod-evicted-mid-run-fails", stepPodEvicted},
		{"18-node-not-ready", stepNodeNotReady},
		{"19-readers-write-dada-files", stepReaderWritesDadaFiles},
		{"20-capture-in-restricted-namespace", stepRestrictedNamespace},
		{"21-helm-upgrade-while-streaming", stepHelmUpgradeWhileStreaming},
		{"22-helm-uninstall-leaves-captures", stepHelmUninstallLeaves},
		{"23-sample-sender-pod-streams", stepSampleSenderPod},
		{"24-spead-senders-outside", stepPacketsOutside},
	}
	for _, st := range steps {
		if !t.Run(st.name, st.fn) {
			t.Fatalf("step %s failed: later steps not run", st.name)
		}
	}
}
