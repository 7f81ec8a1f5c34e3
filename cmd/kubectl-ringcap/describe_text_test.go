package main

import (
	"strings"
	"testing"
	"time"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

func TestDescribeText(t *testing.T) {
	rc := capture("radio", "pulsar", 10*time.Minute, receivingStatus())
	got := describeText(&rc, testNow)
	want := `Name:       pulsar
Namespace:  radio
Created:    2026-11-28T13:50:00Z (10m ago)
Phase:      Receiving
Node:       node-1
Pod:        pulsar-7x2b
Started:    2026-11-28T13:50:00Z (10m ago)
Completed:  -
Restarts:   0
Conditions:
  TYPE            STATUS   REASON          SINCE   MESSAGE
  Ready           True     Receiving       5m      receiving from 10.0.0.2
  ReadersBehind   False    ReadersKeepUp   60m     -
Endpoint:
  Address:    10.0.0.1
  Port:       18515
  Device:     rxe0 port 1
  GID index:  1
  GID:        fe80::5054:ff:fe12:3456
  Netdev:     eth0
Memory registration:
  Mode:     WholeRing
  Regions:  1
  Bytes:    8388608 (8.0 MiB)
Data:
  Rate:           9.6 Gbit/s
  Received:       1.5 GiB (1610612736 bytes)
  Blocks filled:  1536
  Observations:   2
  Held back:      3s
Packets: -
Ring:
  Fill:            6/8
  Slowest reader:  slot 1: 6 blocks (6.0 MiB)
  SLOT   CONNECTED   STATE     LAG BLOCKS   LAG BYTES   LAST ADVANCE
  0      true        READING   1            1.0 MiB     1s ago
  1      true        READING   6            6.0 MiB     9s ago
  2      false       DISCON    2            2.0 MiB     -
Empty reader slots:
  READER   EXIT CODE   EXITED    RESTARTS
  dbdisk   137         30s ago   2
Observation:
  Number:     3
  Source:     J0437-4715
  UTC start:  2026-11-28-13:55:00 (from sender)
  Telescope:  Parkes
  Freq:       1400
  BW:         256
Last run:
  Generation:    1
  Phase:         Failed
  Reason:        RunInterrupted
  Message:       pod evicted
  Received:      1.0 GiB (1073741824 bytes)
  Observations:  1
  Started:       2026-11-28T12:00:00Z (120m ago)
  Completed:     2026-11-28T13:00:00Z (60m ago)
`
	if got != want {
		t.Errorf("describe\n%s\nwant\n%s", got, want)
	}
}

// A capture the operator has not reported on yet: every part says it has no value.
func TestDescribeTextEmptyStatus(t *testing.T) {
	rc := capture("radio", "new", time.Second, ringcapv1.RingCaptureStatus{})
	got := describeText(&rc, testNow)
	for _, want := range []string{"Phase:      -\n", "Conditions: -\n", "Endpoint: -\n", "Memory registration: -\n",
		"Packets: -\n", "Ring: -\n", "Empty reader slots: -\n", "Observation: -\n", "Last run: -\n", "Received:       - (0 bytes)\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("describe of an empty status lacks %q:\n%s", want, got)
		}
	}
}

// A packet capture's describe has its packet counts, each reason a packet was lost on a line.
func TestDescribeTextPackets(t *testing.T) {
	rc := capture("radio", "beam", time.Minute, packetStatus())
	got := describeText(&rc, testNow)
	want := `Packets:
  Protocol:       spead
  Packets:        25
  Received:       23 (23.0 KiB)
  Loss:           17.86%
  Late:           0
  Out of window:  0
  Duplicate:      1
  Malformed:      1
  Invalid:        0
  Out of range:   0
  Kernel drops:   3
  Truncated:      0
  Before start:   0
  Control:        0
  Zero-filled:    4.0 KiB (4096 bytes)
  Blocks:         6
Ring: -
`
	if !strings.Contains(got, want) {
		t.Errorf("describe of a packet capture lacks\n%s\nin\n%s", want, got)
	}
}
