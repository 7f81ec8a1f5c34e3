package main

import (
	"fmt"
	"io"
	"strconv"
	"time"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// writeRing writes the ring's fill and one line per reader slot.
func writeRing(w io.Writer, r *ringcapv1.RingFillStatus, now time.Time) {
	if r == nil {
		_, _ = fmt.Fprintf(w, "Ring: %s\n", none)
		return
	}
	_, _ = fmt.Fprintln(w, "Ring:")
	writeFields(w, "  ", []field{{"Fill", fill(r)}, {"Slowest reader", slowestReader(r)}})
	if len(r.Readers) == 0 {
		return
	}
	rows := [][]string{{"SLOT", "CONNECTED", "STATE", "LAG BLOCKS", "LAG BYTES", "LAST ADVANCE"}}
	for _, s := range r.Readers {
		rows = append(rows, []string{
			strconv.Itoa(int(s.Slot)),
			strconv.FormatBool(s.Connected),
			orNone(s.State),
			strconv.Itoa(int(s.LagBlocks)),
			iecBytes(s.LagBytes),
			ago(s.LastAdvanceTime, now),
		})
	}
	writeIndentedTable(w, rows)
}

// writeEmptySlots writes the readers that exited while the capture runs.
func writeEmptySlots(w io.Writer, slots []ringcapv1.EmptyReaderSlot, now time.Time) {
	if len(slots) == 0 {
		_, _ = fmt.Fprintf(w, "Empty reader slots: %s\n", none)
		return
	}
	_, _ = fmt.Fprintln(w, "Empty reader slots:")
	rows := [][]string{{"READER", "EXIT CODE", "EXITED", "RESTARTS"}}
	for _, s := range slots {
		rows = append(rows, []string{s.Reader, strconv.Itoa(int(s.ExitCode)), ago(s.FinishedAt, now), strconv.Itoa(int(s.Restarts))})
	}
	writeIndentedTable(w, rows)
}

func observationFields(o *ringcapv1.ObservationHeaderStatus) []field {
	if o == nil {
		return nil
	}
	number := none
	if o.Number != nil {
		number = strconv.FormatInt(*o.Number, 10)
	}
	utc := orNone(o.UTCStart)
	if o.UTCStart != "" && o.UTCStartSource != "" {
		utc = fmt.Sprintf("%s (from %s)", o.UTCStart, o.UTCStartSource)
	}
	return []field{
		{"Number", number},
		{"Source", orNone(o.Source)},
		{"UTC start", utc},
		{"Telescope", orNone(o.Telescope)},
		{"Freq", orNone(o.Freq)},
		{"BW", orNone(o.BW)},
	}
}

func lastRunFields(r *ringcapv1.RunSummary, now time.Time) []field {
	if r == nil {
		return nil
	}
	return []field{
		{"Generation", strconv.FormatInt(r.Generation, 10)},
		{"Phase", orNone(string(r.Phase))},
		{"Reason", orNone(r.Reason)},
		{"Message", orNone(r.Message)},
		{"Received", fmt.Sprintf("%s (%d bytes)", iecBytes(r.BytesReceived), r.BytesReceived)},
		{"Observations", strconv.FormatInt(r.Observations, 10)},
		{"Started", timestamp(r.StartTime, now)},
		{"Completed", timestamp(r.CompletionTime, now)},
	}
}
