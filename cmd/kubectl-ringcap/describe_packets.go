package main

import (
	"fmt"
	"strconv"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// packetFields are a packet capture's counts (status.packets): the packets received, the
// loss, then each reason a packet was not written and the bytes zero-filled. None for an
// RDMA capture.
func packetFields(p *ringcapv1.PacketStatus) []field {
	if p == nil {
		return nil
	}
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []field{
		{"Protocol", orNone(p.Protocol)},
		{"Packets", n(p.Packets)},
		{"Received", fmt.Sprintf("%d (%s)", p.ReceivedPackets, iecBytes(p.ReceivedBytes))},
		{"Loss", orNone(p.Loss)},
		{"Late", n(p.Late)},
		{"Out of window", n(p.OutOfWindow)},
		{"Duplicate", n(p.Duplicate)},
		{"Malformed", n(p.Malformed)},
		{"Invalid", n(p.Invalid)},
		{"Out of range", n(p.OutOfRange)},
		{"Kernel drops", n(p.KernelDrops)},
		{"Truncated", n(p.Truncated)},
		{"Before start", n(p.BeforeStart)},
		{"Control", n(p.Control)},
		{"Zero-filled", fmt.Sprintf("%s (%d bytes)", iecBytes(p.ZeroFilledBytes), p.ZeroFilledBytes)},
		{"Blocks", n(p.Blocks)},
	}
}
