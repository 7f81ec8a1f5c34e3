package obsheader

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/wire"
)

func TestBuilderPrecedence(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	b := Builder{Template: []byte("HDR_VERSION 1.0\nSOURCE template_src\nFREQ 1400\nUTC_START 2026-01-01-00:00:00\nHDR_SIZE 999\n"), Size: 4096, Mode: wire.ModeWrite, QPs: 4}
	cases := []struct {
		name   string
		n      int
		sender []wire.HeaderField
		want   map[string]string
	}{
		{"template only, first observation: the template's UTC_START", 0, nil,
			map[string]string{"SOURCE": "template_src", "FREQ": "1400", "UTC_START": "2026-01-01-00:00:00", "RINGCAP_UTC_START_SOURCE": "template", "HDR_SIZE": "4096", "OBS_OFFSET": "0", "RINGCAP_OBSERVATION": "0", "RINGCAP_MODE": "write", "RINGCAP_QPS": "4"}},
		{"template only, later observation: the first byte's time", 3, nil,
			map[string]string{"SOURCE": "template_src", "UTC_START": "2026-11-25-10:00:00", "RINGCAP_UTC_START_SOURCE": "first-byte", "RINGCAP_OBSERVATION": "3"}},
		{"the sender's keywords override the template's", 1, []wire.HeaderField{{Key: "SOURCE", Value: "J1939+2134"}, {Key: "BW", Value: "-400"}},
			map[string]string{"SOURCE": "J1939+2134", "BW": "-400", "FREQ": "1400", "RINGCAP_UTC_START_SOURCE": "first-byte"}},
		{"the sender's UTC_START wins", 0, []wire.HeaderField{{Key: "UTC_START", Value: "2026-11-25-09:59:58"}},
			map[string]string{"UTC_START": "2026-11-25-09:59:58", "RINGCAP_UTC_START_SOURCE": "sender"}},
	}
	for _, c := range cases {
		hd, err := b.Build(c.n, c.sender, now)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for k, v := range c.want {
			if got, _ := hd.Get(k); got != v {
				t.Errorf("%s: %s = %q, want %q\n%s", c.name, k, got, v, hd)
			}
		}
	}
}

// What a sender gets wrong is a *Error naming it; a template too large
// on its own is the receiver's own fault (a plain error).
func TestBuilderRefusals(t *testing.T) {
	b := Builder{Template: []byte("HDR_VERSION 1.0\n"), Size: 4096, Mode: wire.ModeSend, QPs: 1}
	long := strings.Repeat("x", 100)
	var many []wire.HeaderField
	for i := range 60 {
		many = append(many, wire.HeaderField{Key: fmt.Sprintf("KEY_%d", i), Value: long})
	}
	cases := []struct {
		name   string
		sender []wire.HeaderField
		want   string
	}{
		{"a key with a space", []wire.HeaderField{{Key: "BAD KEY", Value: "1"}}, `BAD KEY`},
		{"a value of two words", []wire.HeaderField{{Key: "SOURCE", Value: "two words"}}, `SOURCE, value "two words"`},
		{"a malformed UTC_START", []wire.HeaderField{{Key: "UTC_START", Value: "yesterday"}}, `UTC_START "yesterday"`},
		{"a header that no longer fits", many, "more than the 4096-byte header block"},
		{"too many keywords", make([]wire.HeaderField, wire.MaxHeaderFields+1), "at most 256"},
		{"HDR_SIZE", []wire.HeaderField{{Key: "HDR_SIZE", Value: "16384"}}, "keyword HDR_SIZE: set by the receiver"},
		{"OBS_OFFSET", []wire.HeaderField{{Key: "OBS_OFFSET", Value: "77"}}, "keyword OBS_OFFSET: set by the receiver"},
		{"a RINGCAP_ keyword", []wire.HeaderField{{Key: "RINGCAP_OBSERVATION", Value: "9"}}, "keyword RINGCAP_OBSERVATION: set by the receiver"},
		{"TRANSFER_SIZE", []wire.HeaderField{{Key: "TRANSFER_SIZE", Value: "1048576"}}, "keyword TRANSFER_SIZE: forbidden"},
		{"an empty value", []wire.HeaderField{{Key: "OBSERVER", Value: ""}}, `OBSERVER, value ""`},
	}
	for _, c := range cases {
		_, err := b.Build(0, c.sender, time.Now())
		var he *Error
		if !errors.As(err, &he) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an *Error saying %q", c.name, err, c.want)
		}
	}
	big := Builder{Template: []byte("COMMENT " + strings.Repeat("y", 5000) + "\n"), Size: 4096}
	_, err := big.Build(0, nil, time.Now())
	var he *Error
	if err == nil || errors.As(err, &he) {
		t.Errorf("an oversize template: got %v, want a plain error", err)
	}
}
