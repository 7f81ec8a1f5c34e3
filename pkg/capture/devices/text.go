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
	p := &printer{w: tw}
	p.line("VERBS DEVICE\tDRIVER\tPORT\tSTATE\tLINK LAYER\tGID\tMODES (--transport verbs)")
	if len(r.Verbs) == 0 {
		p.line("(none)\t\t\t\t\t\t")
	}
	for _, d := range r.Verbs {
		for _, vp := range d.Ports {
			p.line("%s\t%s\t%d\t%s\t%s\t%s\t%s", d.Name, orDash(d.Driver), vp.Port, vp.State, vp.LinkLayer, gidText(vp), modesText(d.Modes, d.Note))
		}
	}
	for _, s := range r.Skipped {
		p.line("skipped: %s", s)
	}
	p.line("")
	if !r.OFI.Available {
		p.line("libfabric: %s", r.OFI.Error)
	} else {
		p.line("LIBFABRIC PROVIDER (FI_EP_RDM)\tDOMAIN\tBOUND TO\tRMA\tMSG\tREMOTE CQ DATA\tMR MODE\tMAX MESSAGE\tMODES (--transport ofi --ofi-provider P --ofi-domain D)")
		if len(r.OFI.Providers) == 0 {
			p.line("(none)\t\t\t\t\t\t\t\t")
		}
		for _, o := range r.OFI.Providers {
			p.line("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", o.Provider, o.Domain, orDash(o.Node), yesNo(o.RMA), yesNo(o.Msg), cqDataText(o), o.MRMode,
				sizeText(o.MaxMsgSize), modesText(o.Modes, o.Missing))
		}
		for _, s := range r.OFI.Skipped {
			p.line("skipped: libfabric %s", s)
		}
	}
	if p.err != nil {
		return fmt.Errorf("write device list: %w", p.err)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write device list: %w", err)
	}
	return nil
}

// printer writes lines and keeps the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) line(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
	}
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
