package capture

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/testio"
	"github.com/ringcap/ringcap/pkg/capture/obsheader"
	"github.com/ringcap/ringcap/pkg/capture/sender"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

func headerKey(t *testing.T, text, key string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + key + ` +(\S+)$`).FindStringSubmatch(text)
	if m == nil {
		return ""
	}
	return m[1]
}

func TestObservationHeadersPrecedence(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	b := ObservationHeaders{Template: []byte("HDR_VERSION 1.0\nSOURCE template_src\nFREQ 1400\nUTC_START 2026-01-01-00:00:00\nHDR_SIZE 999\n"), Size: 4096, Mode: wire.ModeWrite, QPs: 4}
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
			if got := headerKey(t, hd.String(), k); got != v {
				t.Errorf("%s: %s = %q, want %q\n%s", c.name, k, got, v, hd)
			}
		}
	}
}

// What a sender gets wrong is a *obsheader.Error naming it; a template too large
// on its own is the receiver's own fault (a plain error).
func TestObservationHeadersRefusals(t *testing.T) {
	b := ObservationHeaders{Template: []byte("HDR_VERSION 1.0\n"), Size: 4096, Mode: wire.ModeSend, QPs: 1}
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
		var he *obsheader.Error
		if !errors.As(err, &he) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want a HeaderError saying %q", c.name, err, c.want)
		}
	}
	big := ObservationHeaders{Template: []byte("COMMENT " + strings.Repeat("y", 5000) + "\n"), Size: 4096}
	_, err := big.Build(0, nil, time.Now())
	var he *obsheader.Error
	if err == nil || errors.As(err, &he) {
		t.Errorf("an oversize template: got %v, want a plain error", err)
	}
}

// Each sender stream is an observation with its own header: keywords sent in
// the handshake reach a fresh reader of that observation; a sender whose
// keywords cannot fit is refused with the reason and the receiver serves the
// next; the status shows the current observation's main keywords.
func TestSenderHeaderKeywords(t *testing.T) {
	const nbufs, bufsz, msg = 4, 8192, 2048
	h := testRing(t, nbufs, bufsz)
	var rxLog testio.Buffer
	hs := startReceiver(t, h, ReceiverConfig{Mode: wire.ModeWrite, QPs: 2, MsgBytes: msg, StopObservations: 2, Log: slog.New(slog.NewTextHandler(&rxLog, nil)),
		Header: ObservationHeaders{Template: []byte("HDR_VERSION 1.0\nSOURCE template_src\n"), Size: 4096}}, wire.MRWholeRing)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	send := func(hdr []wire.HeaderField) (sender.Result, error) {
		return hs.send(ctx, sender.Config{Mode: wire.ModeWrite, QPs: 2, MsgBytes: msg, Bytes: 3*bufsz + 5, Source: sender.PatternSource{Seed: 7}, Header: hdr})
	}
	reads := readObservations(t, ctx, h, 1, 7, 0)
	if res, err := send([]wire.HeaderField{{Key: "SOURCE", Value: "J0437-4715"}}); err != nil || !res.Complete {
		t.Fatalf("observation 0: %+v %v", res, err)
	}
	first := <-reads
	if len(first) != 1 || first[0].err != nil || headerKey(t, first[0].header, "SOURCE") != "J0437-4715" {
		t.Fatalf("observation 0 read: %+v", first)
	}
	if got := hs.rx.Tracker().Snapshot().Header["SOURCE"]; got != "J0437-4715" {
		t.Errorf("status header SOURCE %q during observation 0", got)
	}

	reads = readObservations(t, ctx, h, 1, 7, 0)
	var many []wire.HeaderField
	for i := range 60 {
		many = append(many, wire.HeaderField{Key: fmt.Sprintf("KEY_%d", i), Value: strings.Repeat("x", 100)})
	}
	if _, err := send(many); err == nil || !strings.Contains(err.Error(), "more than the 4096-byte header block") {
		t.Fatalf("an oversize header: %v, want the receiver's refusal", err)
	}
	// A keyword the receiver sets is refused, not dropped: the sender is told which.
	if _, err := send([]wire.HeaderField{{Key: "SOURCE", Value: "J1939+2134"}, {Key: "HDR_SIZE", Value: "1"}}); err == nil || !strings.Contains(err.Error(), "keyword HDR_SIZE: set by the receiver") {
		t.Fatalf("a sender's HDR_SIZE: %v, want the receiver's refusal naming it", err)
	}
	if l := rxLog.String(); !strings.Contains(l, "Rejected sender") || !strings.Contains(l, "keyword HDR_SIZE: set by the receiver") {
		t.Errorf("the receiver's log does not say it refused the sender's HDR_SIZE:\n%s", l)
	}
	sent := []wire.HeaderField{{Key: "SOURCE", Value: "J1939+2134"}, {Key: "UTC_START", Value: "2026-11-25-01:02:03"}}
	if res, err := send(sent); err != nil || !res.Complete {
		t.Fatalf("observation 1: %+v %v", res, err)
	}
	second := <-reads
	if len(second) != 1 || second[0].err != nil || second[0].bytes != 3*bufsz+5 {
		t.Fatalf("observation 1 read: %+v", second)
	}
	if src := headerKey(t, first[0].header, "RINGCAP_UTC_START_SOURCE"); src != obsheader.UTCStartFirstByte {
		t.Errorf("observation 0: UTC_START from %q, want %q", src, obsheader.UTCStartFirstByte)
	}
	hdr := second[0].header
	for k, v := range map[string]string{"SOURCE": "J1939+2134", "UTC_START": "2026-11-25-01:02:03", "RINGCAP_UTC_START_SOURCE": "sender", "HDR_SIZE": "4096", "RINGCAP_OBSERVATION": "1"} {
		if got := headerKey(t, hdr, k); got != v {
			t.Errorf("observation 1: %s = %q, want %q\n%s", k, got, v, hdr)
		}
	}
	if err := hs.wait(); err != nil {
		t.Fatal(err)
	}
	st := hs.rx.Tracker().Snapshot()
	if st.Header["SOURCE"] != "J1939+2134" || st.Header["UTC_START"] != "2026-11-25-01:02:03" || st.Header["RINGCAP_OBSERVATION"] != "1" {
		t.Errorf("status header %v", st.Header)
	}
}
