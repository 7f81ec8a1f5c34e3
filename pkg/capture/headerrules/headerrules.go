// Package headerrules says which observation-header keywords and values a user
// may give a receiver, and whether a receiver's header fits its header block.
// The receiver (ringcap recv), the sender (ringcap send) and the operator
// (the RingCapture's ring.header, checked at reconcile) use these rules; the
// CRD's CEL rules on ring.header.values mirror them, so that the API refuses at
// apply time what the receiver would refuse at start.
package headerrules

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ringcap/ringcap/pkg/dada"
)

// Why a keyword, a value, a template or a header is refused; errors.Is tells
// them apart.
var (
	ErrKey         = errors.New("a header keyword is one printable ASCII word without '#' or '\\'")
	ErrValue       = errors.New("a header value is one printable ASCII word (no blanks, no empty value)")
	ErrReceiverKey = errors.New("set by the receiver in every observation's header")
	ErrForbidden   = errors.New("forbidden")
	ErrUTCStart    = errors.New("UTC_START is YYYY-MM-DD-hh:mm:ss (UTC)")
	ErrTemplate    = errors.New("not a PSRDADA ASCII header")
	ErrTooLarge    = errors.New("header larger than the header block")
)

// ReceiverPrefix starts the keywords ringcap keeps for itself (RINGCAP_MODE,
// RINGCAP_OBSERVATION, ...).
const ReceiverPrefix = "RINGCAP_"

// TransferSize is the keyword no ringcap header may carry: PSRDADA's dada_dbib,
// finding it, skips its closing handshake and dada_ibdb waits forever.
const TransferSize = "TRANSFER_SIZE"

// ReceiverKeyMinBytes is the least the keywords the receiver sets in every
// header (HDR_SIZE, OBS_OFFSET and RINGCAP_*) take in it, each with its shortest value:
// the CRD's CEL estimate of a header's size adds it to the values' lines.
const ReceiverKeyMinBytes = 120

// IsReceiverKey reports whether the receiver sets key in every observation's
// header (HDR_SIZE, OBS_OFFSET) or ringcap keeps it for itself (RINGCAP_*):
// nobody else may set it.
func IsReceiverKey(key string) bool {
	return key == "HDR_SIZE" || key == "OBS_OFFSET" || strings.HasPrefix(key, ReceiverPrefix)
}

// CheckKey checks that key can be a header keyword at all.
func CheckKey(key string) error {
	if !isWord(key) || strings.ContainsAny(key, "#\\") {
		return fmt.Errorf("keyword %q: %w", key, ErrKey)
	}
	return nil
}

// CheckSetting checks a keyword and value a user sets (ring.header.values,
// recv --header, send --header, a sender's handshake): a keyword and value that
// are one printable ASCII word each, a keyword neither the receiver's nor
// TRANSFER_SIZE, and a UTC_START in PSRDADA's format.
func CheckSetting(key, value string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	switch {
	case IsReceiverKey(key):
		return fmt.Errorf("keyword %s: %w (HDR_SIZE, OBS_OFFSET, RINGCAP_*)", key, ErrReceiverKey)
	case key == TransferSize:
		return fmt.Errorf("keyword %s: %w: PSRDADA's dada_dbib would skip its closing handshake and dada_ibdb wait forever", key, ErrForbidden)
	case !isWord(value):
		return fmt.Errorf("keyword %s, value %q: %w", key, value, ErrValue)
	case key == "UTC_START":
		return checkUTCStart(value)
	}
	return nil
}

func checkUTCStart(v string) error {
	if _, err := time.Parse(dada.UTCStartLayout, v); err != nil {
		return fmt.Errorf("UTC_START %q: %w", v, ErrUTCStart)
	}
	return nil
}

// CheckTemplate checks a header template (recv --header-file, ring.header.template
// or its ConfigMap): ASCII text, no TRANSFER_SIZE, a UTC_START in PSRDADA's
// format. Keywords the receiver sets may be in it; the receiver replaces them.
func CheckTemplate(text []byte) error {
	hd, err := dada.ParseHeader(text)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrTemplate, err)
	}
	if _, ok := hd.Get(TransferSize); ok {
		return fmt.Errorf("keyword %s: %w: PSRDADA's dada_dbib would skip its closing handshake and dada_ibdb wait forever", TransferSize, ErrForbidden)
	}
	if v, ok := hd.Get("UTC_START"); ok {
		return checkUTCStart(v)
	}
	return nil
}

// DefaultTemplate is the receiver's template without a template file.
var DefaultTemplate = [][2]string{{"HDR_VERSION", "1.0"}, {"INSTRUMENT", "ringcap"}}

// Template builds a receiver's template: text (nil: DefaultTemplate), checked by
// CheckTemplate, with settings (each checked by CheckSetting) set over it in order.
func Template(text []byte, settings [][2]string) (*dada.Header, error) {
	for _, kv := range settings {
		if err := CheckSetting(kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	hd := dada.NewHeader()
	if text != nil {
		if err := CheckTemplate(text); err != nil {
			return nil, err
		}
		hd, _ = dada.ParseHeader(text) // CheckTemplate parsed it
	} else {
		settings = append(DefaultTemplate[:len(DefaultTemplate):len(DefaultTemplate)], settings...)
	}
	for _, kv := range settings {
		if err := hd.Set(kv[0], kv[1]); err != nil {
			return nil, fmt.Errorf("set header keyword %s: %w", kv[0], err)
		}
	}
	return hd, nil
}

// widest are the keywords the receiver sets in every header, each with the
// longest value it may write (HDR_SIZE is added with the block's size, and
// UTC_START when the template has none).
var widest = [][2]string{
	{"OBS_OFFSET", "0"}, {"RINGCAP_MODE", "write"}, {"RINGCAP_QPS", "64"},
	{"RINGCAP_OBSERVATION", strconv.FormatInt(1<<63-1, 10)}, {"RINGCAP_UTC_START_SOURCE", "first-byte"},
}

// Size is the most bytes a header from template (as Template builds it) takes once the
// receiver has set its keywords, for a header block of blockBytes.
func Size(template *dada.Header, blockBytes int) (int, error) {
	hd, err := dada.ParseHeader([]byte(template.String()))
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrTemplate, err)
	}
	sets := append([][2]string{{"HDR_SIZE", strconv.Itoa(blockBytes)}}, widest...)
	if _, ok := hd.Get("UTC_START"); !ok {
		sets = append(sets, [2]string{"UTC_START", "2006-01-02-15:04:05"})
	}
	for _, kv := range sets {
		if err := hd.Set(kv[0], kv[1]); err != nil {
			return 0, fmt.Errorf("set header keyword %s: %w", kv[0], err)
		}
	}
	return hd.Len(), nil
}

// CheckFits checks that a header from template, with the receiver's keywords,
// fits a header block of blockBytes (HDR_SIZE).
func CheckFits(template *dada.Header, blockBytes int) error {
	n, err := Size(template, blockBytes)
	if err != nil {
		return err
	}
	if n > blockBytes {
		return fmt.Errorf("with the receiver's keywords the header takes up to %d bytes, more than the %d-byte header block: %w", n, blockBytes, ErrTooLarge)
	}
	return nil
}

// isWord reports whether s is non-empty printable ASCII without blanks.
func isWord(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return s != ""
}

// Check checks a receiver's header configuration as a whole: the template text
// (nil: DefaultTemplate) and settings, as Template builds them, and that the
// header fits a header block of blockBytes.
func Check(text []byte, settings [][2]string, blockBytes int) error {
	hd, err := Template(text, settings)
	if err != nil {
		return err
	}
	return CheckFits(hd, blockBytes)
}
