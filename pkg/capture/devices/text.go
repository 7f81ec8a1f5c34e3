package devices

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteText prints the report as two tables: verbs devices (one line a port) and
// libfabric providers (one line a domain).
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VERBS DEVICE\tDRIVER\tPORT\tSTATE\tLINK LAYER\tGID\tMODES (--transport verbs)")
	if len(r.Verbs) == 0 {
		fmt.Fprintln(tw, "(none)\t\t\t\t\t\t")
	}
	for _, d := range r.Verbs {
		for _, p := range d.Ports {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", d.Name, orDash(d.Driver), p.Port, p.State, p.LinkLayer, gidText(p), modesText(d.Modes, d.Note))
		}
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(tw, "skipped: %s\n", s)
	}
	fmt.Fprintln(tw)
	if !r.OFI.Available {
		fmt.Fprintf(tw, "libfabric: %s\n", r.OFI.Error)
		return tw.Flush()
	}
	fmt.Fprintln(tw, "LIBFABRIC PROVIDER (FI_EP_RDM)\tDOMAIN\tRMA\tMSG\tREMOTE CQ DATA\tMR MODE\tMAX MESSAGE\tMODES (--transport ofi --ofi-provider P --ofi-domain D)")
	if len(r.OFI.Providers) == 0 {
		fmt.Fprintln(tw, "(none)\t\t\t\t\t\t\t")
	}
	for _, p := range r.OFI.Providers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Provider, p.Domain, yesNo(p.RMA), yesNo(p.Msg), cqDataText(p), p.MRMode, sizeText(p.MaxMsgSize), modesText(p.Modes, p.Missing))
	}
	return tw.Flush()
}

// gidText is the chosen GID, or why there is none (its first clause: -o json has all).
func gidText(p VerbsPort) string {
	if p.GIDIndex == nil {
		why, _, _ := strings.Cut(p.GIDReason, " (")
		return "none: " + why
	}
	return strconv.Itoa(*p.GIDIndex) + " " + p.GID
}

func modesText(modes []string, note string) string {
	s := strings.Join(modes, ", ")
	switch {
	case s == "":
		return "none (" + note + ")"
	case note != "":
		return s + " (" + note + ")"
	}
	return s
}

func cqDataText(p OFIProvider) string {
	if !p.RemoteCQData {
		return "no"
	}
	return strconv.Itoa(p.CQDataSize) + " bytes"
}

// sizeText is a maximum size; libfabric says SIZE_MAX (or close) for no limit.
func sizeText(n uint64) string {
	if n >= 1<<62 {
		return "unlimited"
	}
	return strconv.FormatUint(n, 10)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
