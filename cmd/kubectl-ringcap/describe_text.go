package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// field is one "Key: value" line of describe.
type field struct{ key, value string }

// describeText is `kubectl ringcap describe` of one capture, as of now.
func describeText(rc *ringcapv1.RingCapture, now time.Time) string {
	var b strings.Builder
	st := &rc.Status
	writeFields(&b, "", []field{
		{"Name", rc.Name},
		{"Namespace", rc.Namespace},
		{"Created", timestamp(&rc.CreationTimestamp, now)},
		{"Phase", orNone(string(st.Phase))},
		{"Node", orNone(st.Node)},
		{"Pod", orNone(st.Pod)},
		{"Started", timestamp(st.StartTime, now)},
		{"Completed", timestamp(st.CompletionTime, now)},
		{"Restarts", strconv.Itoa(int(st.Restarts))},
	})
	writeConditions(&b, st.Conditions, now)
	writeSection(&b, "Endpoint", endpointFields(st.Endpoint))
	writeSection(&b, "Memory registration", memoryFields(st.MemoryRegistration))
	writeSection(&b, "Data", dataFields(st))
	writeSection(&b, "Packets", packetFields(st.Packets))
	writeRing(&b, st.Ring, now)
	writeEmptySlots(&b, st.EmptyReaderSlots, now)
	writeSection(&b, "Observation", observationFields(st.Observation))
	writeSection(&b, "Last run", lastRunFields(st.LastRun, now))
	return b.String()
}

// writeFields writes aligned "Key: value" lines, each after indent.
func writeFields(w io.Writer, indent string, fs []field) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, f := range fs {
		_, _ = fmt.Fprintf(tw, "%s%s:\t%s\n", indent, f.key, f.value)
	}
	_ = tw.Flush()
}

// writeSection writes a titled block of fields indented under it, or "Title: -" when
// there are none (the status has not got that part).
func writeSection(w io.Writer, title string, fs []field) {
	if len(fs) == 0 {
		_, _ = fmt.Fprintf(w, "%s: %s\n", title, none)
		return
	}
	_, _ = fmt.Fprintf(w, "%s:\n", title)
	writeFields(w, "  ", fs)
}

// writeIndentedTable writes rows (the header first) as a table indented by two spaces.
func writeIndentedTable(w io.Writer, rows [][]string) {
	for _, r := range rows {
		r[0] = "  " + r[0]
	}
	_ = writeTable(w, rows)
}

func writeConditions(w io.Writer, conds []metav1.Condition, now time.Time) {
	if len(conds) == 0 {
		_, _ = fmt.Fprintf(w, "Conditions: %s\n", none)
		return
	}
	_, _ = fmt.Fprintln(w, "Conditions:")
	rows := [][]string{{"TYPE", "STATUS", "REASON", "SINCE", "MESSAGE"}}
	for _, c := range conds {
		rows = append(rows, []string{c.Type, string(c.Status), orNone(c.Reason), age(&c.LastTransitionTime, now), orNone(c.Message)})
	}
	writeIndentedTable(w, rows)
}

func endpointFields(e *ringcapv1.EndpointStatus) []field {
	if e == nil {
		return nil
	}
	device := orNone(e.Device)
	if e.Device != "" && e.IBPort != 0 {
		device = fmt.Sprintf("%s port %d", e.Device, e.IBPort)
	}
	gidIndex := none
	if e.GIDIndex != nil {
		gidIndex = strconv.Itoa(int(*e.GIDIndex))
	}
	port := none
	if e.Port != 0 {
		port = strconv.Itoa(int(e.Port))
	}
	fs := []field{
		{"Address", orNone(e.Address)},
		{"Port", port},
		{"Device", device},
		{"GID index", gidIndex},
		{"GID", orNone(e.GID)},
		{"Netdev", orNone(e.Netdev)},
	}
	if e.Network != "" {
		fs = append(fs, field{"Network", e.Network})
	}
	if e.Reason != "" {
		fs = append(fs, field{"Reason", e.Reason})
	}
	return fs
}

func memoryFields(m *ringcapv1.MemoryRegistrationStatus) []field {
	if m == nil {
		return nil
	}
	fs := []field{
		{"Mode", orNone(m.Mode)},
		{"Regions", strconv.Itoa(int(m.Regions))},
		{"Bytes", fmt.Sprintf("%d (%s)", m.Bytes, iecBytes(m.Bytes))},
	}
	if m.Reason != "" {
		fs = append(fs, field{"Reason", m.Reason})
	}
	return fs
}

func dataFields(st *ringcapv1.RingCaptureStatus) []field {
	return []field{
		{"Rate", orNone(st.Rate)},
		{"Received", fmt.Sprintf("%s (%d bytes)", orNone(st.Received), st.BytesReceived)},
		{"Blocks filled", strconv.FormatInt(st.BlocksFilled, 10)},
		{"Observations", strconv.FormatInt(st.Observations, 10)},
		{"Held back", strconv.FormatInt(st.HeldBackSeconds, 10) + "s"},
	}
}
