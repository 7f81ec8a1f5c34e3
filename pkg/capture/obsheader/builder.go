// Package obsheader builds each observation's PSRDADA header from the
// receiver's template and the sender's keywords, and picks the keywords the
// receiver's status shows.
package obsheader

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/headerrules"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/dada"
)

// Where UTC_START came from (RINGCAP_UTC_START_SOURCE).
const (
	UTCStartSender    = "sender"     // the sender's header keywords
	UTCStartTemplate  = "template"   // the receiver's template (first observation only)
	UTCStartFirstByte = "first-byte" // when the stream's first byte landed
)

// StatusKeys are the keywords of the current observation's header that
// Status.Header reports.
var StatusKeys = []string{"SOURCE", "UTC_START", "RINGCAP_UTC_START_SOURCE", "TELESCOPE", "FREQ", "BW", "RINGCAP_OBSERVATION"}

// Error says why a sender's header keywords cannot be used; the
// receiver refuses the sender with its message and keeps serving.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

// Builder builds each observation's header. Precedence, lowest
// first: the receiver's template (--header-file, then --header), then the
// sender's keywords (ringcap send --header-file, then --header), then the
// keywords the receiver owns (HDR_SIZE, OBS_OFFSET, RINGCAP_*). A sender
// that sends one of those, TRANSFER_SIZE, or a keyword headerrules.CheckSetting
// refuses otherwise, is refused with the reason. UTC_START is
// the sender's when it sends one; else, for the first observation only, the
// template's; else when the first byte landed (the receiver writes the header
// then, before the observation's first block).
type Builder struct {
	Template []byte // ASCII header text
	Size     int    // header block bytes (HDR_SIZE)
	Mode     wire.Mode
	QPs      int
}

// Build returns observation n's header text (not padded) for a sender that
// sent the keywords sender, whose first byte landed at now. Problems with the sender's
// keywords, including a header that no longer fits the header block, are a
// *Error.
func (b Builder) Build(n int, sender []wire.HeaderField, now time.Time) (*dada.Header, error) {
	hd, err := dada.ParseHeader(b.Template)
	if err != nil {
		return nil, fmt.Errorf("header template: %w", err)
	}
	source := UTCStartFirstByte
	if _, ok := hd.Get("UTC_START"); ok && n == 0 {
		source = UTCStartTemplate
	}
	if len(sender) > wire.MaxHeaderFields {
		return nil, &Error{fmt.Sprintf("sender sent %d header keywords, at most %d are accepted", len(sender), wire.MaxHeaderFields)}
	}
	for _, f := range sender {
		if err := headerrules.CheckSetting(f.Key, f.Value); err != nil {
			return nil, &Error{fmt.Sprintf("sender's header keywords: %v", err)}
		}
		if err := hd.Set(f.Key, f.Value); err != nil {
			return nil, &Error{fmt.Sprintf("sender's header keyword %s=%q: %v", f.Key, f.Value, err)}
		}
		if f.Key == "UTC_START" {
			source = UTCStartSender
		}
	}
	sets := [][2]string{{"HDR_SIZE", strconv.Itoa(b.Size)}, {"OBS_OFFSET", "0"},
		{"RINGCAP_MODE", b.Mode.String()}, {"RINGCAP_QPS", strconv.Itoa(b.QPs)}, {"RINGCAP_OBSERVATION", strconv.Itoa(n)},
		{"RINGCAP_UTC_START_SOURCE", source}}
	if source == UTCStartFirstByte {
		sets = append(sets, [2]string{"UTC_START", now.UTC().Format(dada.UTCStartLayout)})
	}
	for _, kv := range sets {
		if err := hd.Set(kv[0], kv[1]); err != nil {
			return nil, fmt.Errorf("set header keyword %s: %w", kv[0], err)
		}
	}
	if hd.Len() > b.Size {
		err := fmt.Errorf("observation %d's header is %d bytes, more than the %d-byte header block", n, hd.Len(), b.Size)
		if len(sender) > 0 {
			return nil, &Error{fmt.Sprintf("with the sender's %d keywords, %v", len(sender), err)}
		}
		return nil, err
	}
	return hd, nil
}

// Check checks the template at the receiver's start: a template
// headerrules.CheckTemplate refuses, or whose header with the receiver's
// keywords cannot fit the header block, would fail at the first sender.
func (b Builder) Check() error {
	hd, err := dada.ParseHeader(b.Template)
	if err != nil {
		return fmt.Errorf("header template: %w", err)
	}
	if err := headerrules.CheckTemplate(b.Template); err != nil {
		return fmt.Errorf("header template: %w", err)
	}
	if err := headerrules.CheckFits(hd, b.Size); err != nil {
		return fmt.Errorf("header template: %w", err)
	}
	return nil
}

// StatusFields picks StatusKeys out of hd.
func StatusFields(hd *dada.Header) map[string]string {
	out := map[string]string{}
	for _, k := range StatusKeys {
		if v, ok := hd.Get(k); ok {
			out[k] = v
		}
	}
	return out
}

// IsSendersFault reports whether err is the sender's fault (an *Error).
func IsSendersFault(err error) bool {
	var he *Error
	return errors.As(err, &he)
}
