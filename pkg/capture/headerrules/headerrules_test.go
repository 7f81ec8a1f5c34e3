package headerrules

import (
	"errors"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/pkg/dada"
)

func TestCheckSetting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key, value string
		want       error
	}{
		{"SOURCE", "J0437-4715", nil},
		{"OBSERVER", "Jane_Doe", nil},
		{"UTC_START", "2024-05-01-12:30:00", nil},
		{"freq", "1400", nil}, // PSRDADA keywords are any word; the CRD asks for upper case
		{"OBSERVER", "Jane Doe", ErrValue},
		{"OBSERVER", "", ErrValue},
		{"OBSERVER", "Jürgen", ErrValue},
		{"OBSERVER", "a\nb", ErrValue},
		{"", "x", ErrKey},
		{"MY KEY", "x", ErrKey},
		{"#KEY", "x", ErrKey},
		{"HDR_SIZE", "8192", ErrReceiverKey},
		{"OBS_OFFSET", "0", ErrReceiverKey},
		{"RINGCAP_OBSERVATION", "3", ErrReceiverKey},
		{"RINGCAP_ANYTHING", "3", ErrReceiverKey},
		{"TRANSFER_SIZE", "1048576", ErrForbidden},
		{"UTC_START", "yesterday", ErrUTCStart},
		{"UTC_START", "2024-13-01-12:30:00", ErrUTCStart},
		{"UTC_START", "2024-05-01T12:30:00", ErrUTCStart},
	}
	for _, tt := range tests {
		err := CheckSetting(tt.key, tt.value)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("CheckSetting(%q, %q) = %v, want %v", tt.key, tt.value, err, tt.want)
		}
	}
}

func TestCheckTemplate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text string
		want       error
	}{
		{"psrdada header", "HDR_VERSION 1.0\nHDR_SIZE 4096\nOBS_OFFSET 0\nTELESCOPE Parkes # comment\n", nil},
		{"empty", "", nil},
		{"utc start", "UTC_START 2024-05-01-12:30:00\n", nil},
		{"bad utc start", "UTC_START yesterday\n", ErrUTCStart},
		{"transfer size", "SOURCE x\nTRANSFER_SIZE 1048576\n", ErrForbidden},
		{"commented transfer size", "# TRANSFER_SIZE 1048576\n", nil},
		{"non ascii", "OBSERVER Jürgen\n", ErrTemplate},
		{"control byte", "OBSERVER \x01\n", ErrTemplate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckTemplate([]byte(tt.text))
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("CheckTemplate = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 200)
	var twenty [][2]string
	for i := range 20 {
		twenty = append(twenty, [2]string{"KEY_" + string(rune('A'+i)), long})
	}
	tests := []struct {
		name       string
		text       []byte
		settings   [][2]string
		blockBytes int
		want       error
	}{
		{"default", nil, nil, 4096, nil},
		{"settings", nil, [][2]string{{"TELESCOPE", "Parkes"}}, 4096, nil},
		{"bad setting", nil, [][2]string{{"OBSERVER", "Jane Doe"}}, 4096, ErrValue},
		{"receiver key", nil, [][2]string{{"HDR_SIZE", "8192"}}, 4096, ErrReceiverKey},
		{"twenty long values", nil, twenty, 4096, ErrTooLarge},
		{"twenty long values, larger block", nil, twenty, 8192, nil},
		{"template too large", []byte(strings.Repeat("K "+long+"\n", 20)), nil, 4096, ErrTooLarge},
		{"template that fits until the receiver's keys", []byte("K " + strings.Repeat("x", 4000) + "\n"), nil, 4096, ErrTooLarge},
		{"bad template", []byte("TRANSFER_SIZE 1\n"), nil, 4096, ErrForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.text, tt.settings, tt.blockBytes)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("Check = %v, want %v", err, tt.want)
			}
		})
	}
}

// The CRD's CEL estimate (ReceiverKeyMinBytes plus a "%-12s %s\n" line per value)
// is a lower bound of the header's size: it refuses nothing that fits.
func TestReceiverKeyMinBytes(t *testing.T) {
	t.Parallel()
	hd := dada.NewHeader()
	for _, kv := range [][2]string{{"HDR_SIZE", "4096"}, {"OBS_OFFSET", "0"}, {"RINGCAP_MODE", "send"},
		{"RINGCAP_QPS", "1"}, {"RINGCAP_OBSERVATION", "0"}, {"RINGCAP_UTC_START_SOURCE", "sender"}} {
		if err := hd.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if hd.Len() != ReceiverKeyMinBytes {
		t.Errorf("the receiver's keywords take at least %d bytes, ReceiverKeyMinBytes is %d", hd.Len(), ReceiverKeyMinBytes)
	}
	// Values alone at the CEL bound: the header built from them is no smaller.
	settings := [][2]string{{"SOURCE", "J0437-4715"}, {"A_LONG_KEYWORD_NAME", "v"}}
	estimate := ReceiverKeyMinBytes
	for _, kv := range settings {
		estimate += max(len(kv[0]), 12) + len(kv[1]) + 2
	}
	tmpl, err := Template(nil, settings)
	if err != nil {
		t.Fatal(err)
	}
	n, err := Size(tmpl, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if n < estimate {
		t.Errorf("header of %d bytes is smaller than the CEL estimate %d", n, estimate)
	}
}
