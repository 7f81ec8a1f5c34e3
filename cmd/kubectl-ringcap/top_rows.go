package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// topHeader are the columns of `kubectl ringcap top` (NAMESPACE only with -A).
var topHeader = []string{"NAME", "PHASE", "RATE", "RECEIVED", "FILL", "SLOWEST READER", "HELD BACK", "LOSS", "OBS", "AGE"}

// topRows turns captures into the rows of `top`, sorted by namespace and name, the
// header first; withNamespace adds the NAMESPACE column in front.
func topRows(items []ringcapv1.RingCapture, withNamespace bool, now time.Time) [][]string {
	sorted := slices.Clone(items)
	slices.SortFunc(sorted, func(a, b ringcapv1.RingCapture) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	header := topHeader
	if withNamespace {
		header = append([]string{"NAMESPACE"}, topHeader...)
	}
	rows := [][]string{header}
	for i := range sorted {
		rc := &sorted[i]
		row := []string{
			rc.Name,
			orNone(string(rc.Status.Phase)),
			orNone(rc.Status.Rate),
			orNone(rc.Status.Received),
			fill(rc.Status.Ring),
			slowestReader(rc.Status.Ring),
			strconv.FormatInt(rc.Status.HeldBackSeconds, 10) + "s",
			loss(rc.Status.Packets),
			strconv.FormatInt(rc.Status.Observations, 10),
			age(&rc.CreationTimestamp, now),
		}
		if withNamespace {
			row = append([]string{rc.Namespace}, row...)
		}
		rows = append(rows, row)
	}
	return rows
}

// fill is status.ring.fill, or filledBlocks/blocks when the receiver left it empty.
func fill(r *ringcapv1.RingFillStatus) string {
	switch {
	case r == nil:
		return none
	case r.Fill != "":
		return r.Fill
	default:
		return fmt.Sprintf("%d/%d", r.FilledBlocks, r.Blocks)
	}
}

// loss is a packet capture's status.packets.loss; none for an RDMA capture and before
// the first packet.
func loss(p *ringcapv1.PacketStatus) string {
	if p == nil {
		return none
	}
	return orNone(p.Loss)
}

// slowestReader names the reader slot furthest behind the writer: the largest lag,
// then an empty slot before a connected one, then the lower slot number.
func slowestReader(r *ringcapv1.RingFillStatus) string {
	if r == nil || len(r.Readers) == 0 {
		return none
	}
	slowest := slices.MaxFunc(r.Readers, func(a, b ringcapv1.ReaderSlotStatus) int {
		return cmp.Or(cmp.Compare(a.LagBlocks, b.LagBlocks), cmp.Compare(boolRank(!a.Connected), boolRank(!b.Connected)),
			cmp.Compare(b.Slot, a.Slot))
	})
	if !slowest.Connected {
		return fmt.Sprintf("slot %d: empty", slowest.Slot)
	}
	return fmt.Sprintf("slot %d: %s", slowest.Slot, lag(slowest))
}

// lag is a slot's lag, e.g. "6 blocks (6.0 MiB)".
func lag(s ringcapv1.ReaderSlotStatus) string {
	unit := "blocks"
	if s.LagBlocks == 1 {
		unit = "block"
	}
	return fmt.Sprintf("%d %s (%s)", s.LagBlocks, unit, iecBytes(s.LagBytes))
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writeTable writes rows as kubectl does: left-aligned columns three spaces apart.
func writeTable(w io.Writer, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	for _, row := range rows {
		if _, err := fmt.Fprintln(tw, strings.Join(row, "\t")); err != nil {
			return fmt.Errorf("write the table: %w", err)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write the table: %w", err)
	}
	return nil
}
