package main

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// testNow is the clock of the unit tests.
var testNow = time.Date(2026, 11, 28, 14, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func at(d time.Duration) *metav1.Time {
	t := metav1.NewTime(testNow.Add(-d))
	return &t
}

// receivingStatus is the status of a capture receiving into an 8-block ring with 1 MiB
// blocks and three reader slots: slot 0 close behind, slot 1 six blocks behind, slot 2 empty.
func receivingStatus() ringcapv1.RingCaptureStatus {
	return ringcapv1.RingCaptureStatus{
		Phase: "Receiving",
		Conditions: []metav1.Condition{
			{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Receiving", Message: "receiving from 10.0.0.2",
				LastTransitionTime: *at(5 * time.Minute)},
			{Type: "ReadersBehind", Status: metav1.ConditionFalse, Reason: "ReadersKeepUp", LastTransitionTime: *at(time.Hour)},
		},
		Node: "node-1",
		Pod:  "pulsar-7x2b",
		Endpoint: &ringcapv1.EndpointStatus{Address: "10.0.0.1", Port: 18515, Device: "rxe0", IBPort: 1,
			GIDIndex: ptr(int32(1)), GID: "fe80::5054:ff:fe12:3456", Netdev: "eth0"},
		MemoryRegistration: &ringcapv1.MemoryRegistrationStatus{Mode: "WholeRing", Regions: 1, Bytes: 8 << 20},
		BytesReceived:      1610612736,
		Received:           "1.5 GiB",
		BlocksFilled:       1536,
		Observations:       2,
		Rate:               "9.6 Gbit/s",
		StartTime:          at(10 * time.Minute),
		HeldBackSeconds:    3,
		Observation: &ringcapv1.ObservationHeaderStatus{Number: ptr(int64(3)), Source: "J0437-4715",
			UTCStart: "2026-11-28-13:55:00", UTCStartSource: "sender", Telescope: "Parkes", Freq: "1400", BW: "256"},
		EmptyReaderSlots: []ringcapv1.EmptyReaderSlot{{Reader: "dbdisk", ExitCode: 137, FinishedAt: at(30 * time.Second), Restarts: 2}},
		LastRun: &ringcapv1.RunSummary{Generation: 1, Phase: "Failed", Reason: "RunInterrupted", Message: "pod evicted",
			BytesReceived: 1 << 30, Observations: 1, StartTime: at(2 * time.Hour), CompletionTime: at(time.Hour)},
		Ring: &ringcapv1.RingFillStatus{FilledBlocks: 6, Blocks: 8, Fill: "6/8", Readers: []ringcapv1.ReaderSlotStatus{
			{Slot: 0, Connected: true, State: "READING", LagBlocks: 1, LagBytes: 1 << 20, LastAdvanceTime: at(time.Second)},
			{Slot: 1, Connected: true, State: "READING", LagBlocks: 6, LagBytes: 6 << 20, LastAdvanceTime: at(9 * time.Second)},
			{Slot: 2, Connected: false, State: "DISCON", LagBlocks: 2, LagBytes: 2 << 20},
		}},
	}
}

// packetStatus is the status of a SPEAD capture receiving: 25 packets delivered, 23
// written, one duplicate and one malformed, 3 dropped by the kernel.
func packetStatus() ringcapv1.RingCaptureStatus {
	return ringcapv1.RingCaptureStatus{
		Phase: "Receiving", Rate: "1.2 Gbit/s", Received: "23.0 KiB", BytesReceived: 23552, Observations: 0,
		Packets: &ringcapv1.PacketStatus{Protocol: "spead", Packets: 25, ReceivedPackets: 23, ReceivedBytes: 23552,
			Duplicate: 1, Malformed: 1, KernelDrops: 3, ZeroFilledBytes: 4096, Blocks: 6, Loss: "17.86%"},
	}
}

func capture(ns, name string, created time.Duration, st ringcapv1.RingCaptureStatus) ringcapv1.RingCapture {
	return ringcapv1.RingCapture{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: *at(created)},
		Status:     st,
	}
}
