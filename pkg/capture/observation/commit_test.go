package observation

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/obsheader"
	"github.com/ringcap/ringcap/pkg/capture/status"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/dada"
)

// recordingWriter keeps the headers written to it.
type recordingWriter struct{ headers [][]byte }

func (w *recordingWriter) WriteHeader(h []byte) error {
	w.headers = append(w.headers, h)
	return nil
}
func (w *recordingWriter) OpenBlock(context.Context) (int, error)      { return 0, nil }
func (w *recordingWriter) MarkFilled(context.Context, int, bool) error { return nil }
func (w *recordingWriter) EndOfData(context.Context) error             { return nil }

// An observation writes its header once, before its first block,
// with UTC_START when the first byte landed (not when the sender connected),
// and shows it in the status; a sender's UTC_START wins.
func TestHeaderWrittenWhenTheFirstByteLanded(t *testing.T) {
	landed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		sender      []wire.HeaderField
		utc, source string
	}{
		{nil, "2026-01-02-03:04:05", obsheader.UTCStartFirstByte},
		{[]wire.HeaderField{{Key: "UTC_START", Value: "2026-01-02-03:04:01"}}, "2026-01-02-03:04:01", obsheader.UTCStartSender},
	} {
		w := &recordingWriter{}
		b := obsheader.Builder{Template: []byte("SOURCE J0437-4715\n"), Size: 4096, Mode: wire.ModeSend, QPs: 1}
		tr := status.NewTracker()
		o := &Observation{cfg: Config{Number: 3, Writer: w, HeaderSize: b.Size, Tracker: tr,
			Header: func(start time.Time) (*dada.Header, error) { return b.Build(3, c.sender, start) }}}
		o.DataLanded(landed)
		for range 2 {
			if err := o.writeHeader(); err != nil {
				t.Fatal(err)
			}
		}
		if len(w.headers) != 1 || len(w.headers[0]) != 4096 {
			t.Fatalf("%d headers written, want one header block", len(w.headers))
		}
		text := strings.TrimRight(string(w.headers[0]), "\x00")
		hd, err := dada.ParseHeader([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		headerKey := func(key string) string { v, _ := hd.Get(key); return v }
		if headerKey("UTC_START") != c.utc || headerKey("RINGCAP_UTC_START_SOURCE") != c.source || headerKey("RINGCAP_OBSERVATION") != "3" {
			t.Errorf("header written:\n%s\nwant UTC_START %s from %s", text, c.utc, c.source)
		}
		if st := tr.Snapshot(); st.Header["UTC_START"] != c.utc || st.Header["SOURCE"] != "J0437-4715" {
			t.Errorf("status header %v", st.Header)
		}
	}
}
