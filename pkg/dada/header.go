package dada

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// UTCStartLayout is PSRDADA's UTC_START format (%Y-%m-%d-%H:%M:%S).
const UTCStartLayout = "2006-01-02-15:04:05"

// ErrNoKey: the header has no such keyword.
var ErrNoKey = errors.New("header keyword not found")

// Header is a PSRDADA ASCII header: "KEYWORD value" lines, '#' comments, NUL padded to
// HDR_SIZE. Lookups follow ascii_header_get: a keyword matches only at the start of the
// text or of a line (or after a backslash) and only when a space or tab follows it.
type Header struct {
	text []byte
}

// ParseHeader parses a header block, ignoring everything from the first NUL byte.
func ParseHeader(b []byte) (*Header, error) {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	for i, c := range b {
		if c >= 0x80 || (c < 0x20 && c != '\n' && c != '\t' && c != '\r') {
			return nil, fmt.Errorf("parse header: byte %d (%#x) is not ASCII text", i, c)
		}
	}
	return &Header{text: bytes.Clone(b)}, nil
}

// NewHeader returns an empty header.
func NewHeader() *Header { return &Header{} }

// String returns the header text.
func (h *Header) String() string { return string(h.text) }

// Len returns the length of the header text.
func (h *Header) Len() int { return len(h.text) }

// Bytes returns the header NUL padded to size bytes (a header block, HDR_SIZE).
func (h *Header) Bytes(size int) ([]byte, error) {
	if len(h.text) > size {
		return nil, fmt.Errorf("header text is %d bytes, larger than HDR_SIZE %d", len(h.text), size)
	}
	out := make([]byte, size)
	copy(out, h.text)
	return out, nil
}

// find returns the offset of the value following keyword, or -1.
func (h *Header) find(key string) (start, lineStart int) {
	if key == "" || strings.ContainsAny(key, " \t\n\x00") {
		return -1, -1
	}
	t := h.text
	from := 0
	for {
		i := bytes.Index(t[from:], []byte(key))
		if i < 0 {
			return -1, -1
		}
		i += from
		end := i + len(key)
		atStart := i == 0 || t[i-1] == '\n' || t[i-1] == '\\'
		if atStart && end < len(t) && (t[end] == ' ' || t[end] == '\t') {
			return end, i
		}
		from = i + 1
	}
}

// Get returns the first whitespace-delimited word after keyword (what sscanf "%s" reads).
func (h *Header) Get(key string) (string, bool) {
	start, _ := h.find(key)
	if start < 0 {
		return "", false
	}
	rest := h.text[start:]
	if nl := bytes.IndexByte(rest, '\n'); nl >= 0 {
		rest = rest[:nl]
	}
	f := strings.Fields(string(rest))
	if len(f) == 0 {
		return "", false
	}
	return f[0], true
}

// Set sets keyword to value. An existing line is rewritten as "%-12s %-20s   " followed by
// whatever followed the old value (a comment, say), as ascii_header_set does (without
// trailing blanks when nothing followed); a new keyword is appended as "%-12s %s".
func (h *Header) Set(key, value string) error {
	if !isWord(key) || strings.ContainsAny(key, "#\\") {
		return fmt.Errorf("set header keyword %q: invalid keyword (one printable ASCII word, no '#' or '\\')", key)
	}
	if !isWord(value) {
		return fmt.Errorf("set header keyword %s: value %q must be one printable ASCII word", key, value)
	}
	start, ls := h.find(key)
	if start < 0 {
		var b bytes.Buffer
		b.Write(h.text)
		if len(h.text) > 0 && h.text[len(h.text)-1] != '\n' {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%-12s %s\n", key, value)
		h.text = b.Bytes()
		return nil
	}
	lineEnd := len(h.text)
	if nl := bytes.IndexByte(h.text[start:], '\n'); nl >= 0 {
		lineEnd = start + nl
	}
	line := string(h.text[start:lineEnd])
	// skip the separator and the old value
	rest := strings.TrimLeft(line, " \t")
	if i := strings.IndexAny(rest, " \t"); i >= 0 {
		rest = strings.TrimLeft(rest[i:], " \t")
	} else {
		rest = ""
	}
	nl := fmt.Sprintf("%-12s %s", key, value)
	if rest != "" {
		nl = fmt.Sprintf("%-12s %-20s   %s", key, value, rest)
	}
	out := make([]byte, 0, len(h.text)+len(nl))
	out = append(out, h.text[:ls]...)
	out = append(out, nl...)
	out = append(out, h.text[lineEnd:]...)
	h.text = out
	return nil
}

// Fields returns the header's keywords and their values (each value's first word) in
// order, skipping blank lines, comment lines and keywords without a value.
func (h *Header) Fields() [][2]string {
	var out [][2]string
	for _, line := range strings.Split(string(h.text), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") || strings.HasPrefix(f[1], "#") {
			continue
		}
		out = append(out, [2]string{f[0], f[1]})
	}
	return out
}

// GetInt returns keyword's value as an integer.
func (h *Header) GetInt(key string) (int64, error) {
	v, ok := h.Get(key)
	if !ok {
		return 0, fmt.Errorf("%s: %w", key, ErrNoKey)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("header %s %q: not an integer", key, v)
	}
	return n, nil
}

// GetUint returns keyword's value as an unsigned integer.
func (h *Header) GetUint(key string) (uint64, error) {
	v, ok := h.Get(key)
	if !ok {
		return 0, fmt.Errorf("%s: %w", key, ErrNoKey)
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("header %s %q: not an unsigned integer", key, v)
	}
	return n, nil
}

// GetFloat returns keyword's value as a float.
func (h *Header) GetFloat(key string) (float64, error) {
	v, ok := h.Get(key)
	if !ok {
		return 0, fmt.Errorf("%s: %w", key, ErrNoKey)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("header %s %q: not a number", key, v)
	}
	return f, nil
}

// Well-known keys.

// HDRSize returns HDR_SIZE (bytes of the header block).
func (h *Header) HDRSize() (int, error) {
	n, err := h.GetUint("HDR_SIZE")
	return int(n), err
}

// OBSOffset returns OBS_OFFSET (bytes since the start of the observation).
func (h *Header) OBSOffset() (uint64, error) { return h.GetUint("OBS_OFFSET") }

// FileSize returns FILE_SIZE.
func (h *Header) FileSize() (uint64, error) { return h.GetUint("FILE_SIZE") }

// BytesPerSecond returns BYTES_PER_SECOND.
func (h *Header) BytesPerSecond() (float64, error) { return h.GetFloat("BYTES_PER_SECOND") }

// NBit returns NBIT.
func (h *Header) NBit() (int, error) { n, err := h.GetInt("NBIT"); return int(n), err }

// NChan returns NCHAN (1 if absent, as dspsr defaults).
func (h *Header) NChan() (int, error) { return h.intDefault("NCHAN", 1) }

// NPol returns NPOL.
func (h *Header) NPol() (int, error) { n, err := h.GetInt("NPOL"); return int(n), err }

// NDim returns NDIM (1 if absent, as dspsr defaults).
func (h *Header) NDim() (int, error) { return h.intDefault("NDIM", 1) }

// Freq returns FREQ (centre frequency, MHz).
func (h *Header) Freq() (float64, error) { return h.GetFloat("FREQ") }

// BW returns BW (MHz; negative means inverted band).
func (h *Header) BW() (float64, error) { return h.GetFloat("BW") }

// TSamp returns TSAMP as a duration (the header holds microseconds).
func (h *Header) TSamp() (time.Duration, error) {
	us, err := h.GetFloat("TSAMP")
	return time.Duration(us * float64(time.Microsecond)), err
}

// UTCStart returns UTC_START (%Y-%m-%d-%H:%M:%S).
func (h *Header) UTCStart() (time.Time, error) {
	v, ok := h.Get("UTC_START")
	if !ok {
		return time.Time{}, fmt.Errorf("UTC_START: %w", ErrNoKey)
	}
	t, err := time.Parse(UTCStartLayout, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("header UTC_START %q: not %s", v, UTCStartLayout)
	}
	return t, nil
}

// SetUTCStart sets UTC_START.
func (h *Header) SetUTCStart(t time.Time) error {
	return h.Set("UTC_START", t.UTC().Format(UTCStartLayout))
}

// Source returns SOURCE.
func (h *Header) Source() string { v, _ := h.Get("SOURCE"); return v }

// Telescope returns TELESCOPE.
func (h *Header) Telescope() string { v, _ := h.Get("TELESCOPE"); return v }

// Instrument returns INSTRUMENT.
func (h *Header) Instrument() string { v, _ := h.Get("INSTRUMENT"); return v }

func (h *Header) intDefault(key string, def int) (int, error) {
	if _, ok := h.Get(key); !ok {
		return def, nil
	}
	n, err := h.GetInt(key)
	return int(n), err
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
