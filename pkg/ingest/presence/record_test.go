package presence

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/ingest/assemble"
)

// A record decodes to what was encoded: the counts, and granule k present
// exactly when no missing byte falls in it.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		granule := uint64(1 + rng.IntN(300))
		expected := uint64(1 + rng.IntN(5000))
		missing := randomGaps(rng, expected)
		var lost uint64
		for _, m := range missing {
			lost += m.Len
		}
		in := assemble.Record{Seq: uint64(i), Expected: expected, Received: expected - lost, Missing: missing, Last: i%7 == 0}
		buf := make([]byte, Bytes(expected, granule)+3)
		n, err := Encode(buf, in, granule)
		if err != nil || uint64(n) != Bytes(expected, granule) {
			t.Fatalf("encode: %d bytes, %v", n, err)
		}
		out, err := Decode(buf[:n])
		if err != nil {
			t.Fatal(err)
		}
		if out.Seq != in.Seq || out.Expected != expected || out.Received != in.Received || out.Granule != granule ||
			out.Granules != Granules(expected, granule) || out.Last != in.Last {
			t.Fatalf("record %d: %+v from %+v", i, out, in)
		}
		for k := range out.Granules {
			want := !touches(missing, k*granule, min((k+1)*granule, expected))
			if out.Present(k) != want {
				t.Fatalf("record %d: granule %d present %v, want %v (missing %v, granule %d)", i, k, out.Present(k), want, missing, granule)
			}
		}
		if pad := out.Granules % 8; pad != 0 && out.Bitmap[len(out.Bitmap)-1]>>pad != 0 {
			t.Fatalf("record %d: bits past the granules are set", i)
		}
	}
}

// randomGaps are sorted, disjoint byte ranges inside n bytes.
func randomGaps(rng *rand.Rand, n uint64) []assemble.Range {
	var gaps []assemble.Range
	for off := uint64(rng.IntN(200)); off < n; off += uint64(1 + rng.IntN(400)) {
		l := min(uint64(1+rng.IntN(150)), n-off)
		gaps = append(gaps, assemble.Range{Off: off, Len: l})
		off += l
	}
	return gaps
}

func touches(gaps []assemble.Range, from, to uint64) bool {
	for _, g := range gaps {
		if g.Off < to && g.Off+g.Len > from {
			return true
		}
	}
	return false
}

// Missing bytes aligned to granules clear exactly their granules; the runs
// and the text say which.
func TestAlignedLossAndText(t *testing.T) {
	in := assemble.Record{Seq: 3, Expected: 8 * 8192, Received: 5 * 8192, Missing: []assemble.Range{{Off: 8192, Len: 8192}, {Off: 5 * 8192, Len: 2 * 8192}}}
	buf := make([]byte, Bytes(in.Expected, 8192))
	if _, err := Encode(buf, in, 8192); err != nil {
		t.Fatal(err)
	}
	r, err := Decode(buf)
	if err != nil {
		t.Fatal(err)
	}
	if r.Bitmap[0] != 0b10011101 || r.MissingGranules() != 3 {
		t.Errorf("bitmap %08b, %d missing", r.Bitmap[0], r.MissingGranules())
	}
	want := "seq=3 expected=65536 received=40960 zero_filled=24576 granule=8192 granules=8 missing_granules=3 missing=1,5-6"
	if s := r.String(); s != want {
		t.Errorf("text %q\nwant %q", s, want)
	}
	in.Missing, in.Received, in.Last = nil, in.Expected, true
	_, _ = Encode(buf, in, 8192)
	r, _ = Decode(buf)
	if !strings.HasSuffix(r.String(), "missing_granules=0 missing=- last") {
		t.Errorf("complete: %q", r)
	}
}

// Decode refuses what is not a record.
func TestDecodeRefuses(t *testing.T) {
	good := make([]byte, Bytes(100, 10))
	if _, err := Encode(good, assemble.Record{Expected: 100, Received: 100}, 10); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func([]byte) []byte{
		"short":     func(b []byte) []byte { return b[:HeaderBytes-1] },
		"magic":     func(b []byte) []byte { b[0] = 'X'; return b },
		"version":   func(b []byte) []byte { b[8] = 2; return b },
		"granule 0": func(b []byte) []byte { clear(b[40:48]); return b },
		"granules":  func(b []byte) []byte { b[48]++; return b },
		"received":  func(b []byte) []byte { b[32] = 101; return b },
		"bitmap":    func(b []byte) []byte { return b[:len(b)-1] },
	} {
		b := mod(append([]byte(nil), good...))
		if _, err := Decode(b); !errors.Is(err, ErrRecord) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Encode(good[:10], assemble.Record{Expected: 100}, 10); err == nil {
		t.Error("encode into too few bytes")
	}
	if _, err := Encode(good, assemble.Record{Expected: 100}, 0); err == nil {
		t.Error("encode with a granule of 0")
	}
}

// The presence ring's header is the data ring's with the presence keys.
func TestHeader(t *testing.T) {
	data := dada.NewHeader()
	_ = data.Set("HDR_SIZE", "4096")
	_ = data.Set("UTC_START", "2026-11-29-05:00:00")
	db, _ := data.Bytes(4096)
	r := Ring{DataKey: 0xdada, DataBlock: 1 << 20, Granule: 8192, HeaderSize: 4096}
	if r.BlockBytes() != HeaderBytes+16 {
		t.Errorf("block bytes %d", r.BlockBytes())
	}
	b, err := r.Header(db)
	if err != nil || len(b) != 4096 || !IsPresenceHeader(b) || IsPresenceHeader(db) {
		t.Fatalf("header %d bytes, %v", len(b), err)
	}
	hd, _ := dada.ParseHeader(b)
	for k, want := range map[string]string{"UTC_START": "2026-11-29-05:00:00", KeyGranule: "8192", KeyDataKey: "dada", KeyDataBlock: "1048576", KeyFormat: FormatName} {
		if v, _ := hd.Get(k); v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
}
