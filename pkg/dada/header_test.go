package dada

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

const sampleHeader = "HDR_VERSION 1.0\nHDR_SIZE    4096\n# OBS_OFFSET 99 is a comment\n" +
	"TELESCOPE\tParkes\nSOURCE J0437-4715   # the pulsar\nFREQ 1400.5\nBW -64\nNBIT 8\n" +
	"TSAMP 0.5\nUTC_START 2010-04-13-02:05:45\nOBS_OFFSET 0\nNPOL 2\nXOBS 5\nFILE_SIZE\n"

func TestHeaderGetSemantics(t *testing.T) {
	h, err := ParseHeader(append([]byte(sampleHeader), make([]byte, 100)...))
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"HDR_VERSION": "1.0", "HDR_SIZE": "4096", "TELESCOPE": "Parkes", "SOURCE": "J0437-4715",
		"OBS_OFFSET": "0", "BW": "-64",
	} {
		if got, ok := h.Get(key); !ok || got != want {
			t.Errorf("Get(%s) = %q, %v; want %q", key, got, ok, want)
		}
	}
	// Keywords match only at line start and followed by blank; a keyword with no value
	// is absent; "OBS" is not a prefix match of XOBS or OBS_OFFSET.
	for _, key := range []string{"OBS", "FILE_SIZE", "NCHAN", "ARSE", "PSR", ""} {
		if v, ok := h.Get(key); ok {
			t.Errorf("Get(%q) = %q, want absent", key, v)
		}
	}
	if n, _ := h.HDRSize(); n != 4096 {
		t.Errorf("HDRSize = %d", n)
	}
	if ts, _ := h.TSamp(); ts != 500*time.Nanosecond {
		t.Errorf("TSamp = %v", ts)
	}
	if u, err := h.UTCStart(); err != nil || !u.Equal(time.Date(2010, 4, 13, 2, 5, 45, 0, time.UTC)) {
		t.Errorf("UTCStart = %v, %v", u, err)
	}
	if n, _ := h.NChan(); n != 1 {
		t.Errorf("NChan default = %d", n)
	}
	if _, err := h.FileSize(); err == nil {
		t.Error("FileSize with no value parsed")
	}
	if _, err := ParseHeader([]byte("A 1\n\xff")); err == nil {
		t.Error("binary header accepted")
	}
}

func TestHeaderSet(t *testing.T) {
	h, _ := ParseHeader([]byte(sampleHeader))
	if err := h.Set("SOURCE", "B1937+21"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.String(), "SOURCE       B1937+21               # the pulsar\n") {
		t.Errorf("rewritten line:\n%s", h)
	}
	if err := h.Set("OBS_OFFSET", "1048576"); err != nil {
		t.Fatal(err)
	}
	if v, _ := h.OBSOffset(); v != 1048576 {
		t.Errorf("OBS_OFFSET = %d", v)
	}
	if !strings.Contains(h.String(), "# OBS_OFFSET 99 is a comment") {
		t.Error("Set touched a comment")
	}
	if err := h.Set("NCHAN", "16"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(h.String(), "NCHAN        16\n") {
		t.Errorf("new key not appended:\n%s", h)
	}
	for _, bad := range [][2]string{{"A B", "1"}, {"", "1"}, {"K", ""}, {"K", "two words"}} {
		if err := h.Set(bad[0], bad[1]); err == nil {
			t.Errorf("Set(%q, %q) accepted", bad[0], bad[1])
		}
	}
	b, err := h.Bytes(4096)
	if err != nil || len(b) != 4096 || !bytes.HasPrefix(b, []byte("HDR_VERSION")) || b[4095] != 0 {
		t.Fatalf("Bytes(4096) = %d bytes, %v", len(b), err)
	}
	if _, err := h.Bytes(10); err == nil {
		t.Error("Bytes smaller than the text accepted")
	}
}

// FuzzParseHeader checks the parser never fails on text it produced, that Set/Get round
// trip, and that Bytes/ParseHeader round trip.
func FuzzParseHeader(f *testing.F) {
	f.Add([]byte(sampleHeader), "SOURCE", "X")
	f.Add([]byte("A 1\nB\t2\n\\C 3"), "C", "4")
	f.Add([]byte(""), "NEW", "1")
	f.Fuzz(func(t *testing.T, text []byte, key, value string) {
		h, err := ParseHeader(text)
		if err != nil {
			return
		}
		if err := h.Set(key, value); err != nil {
			return
		}
		if got, ok := h.Get(key); !ok || got != value {
			t.Fatalf("after Set(%q, %q), Get = %q, %v\n%q", key, value, got, ok, h.String())
		}
		b, err := h.Bytes(h.Len() + 1)
		if err != nil {
			t.Fatal(err)
		}
		h2, err := ParseHeader(b)
		if err != nil || h2.String() != h.String() {
			t.Fatalf("Bytes/ParseHeader round trip: %v", err)
		}
	})
}
