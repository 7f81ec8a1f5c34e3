package capture

import (
	"context"
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
