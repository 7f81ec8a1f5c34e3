package rdma

import (
	"strings"
	"testing"
)

// FuzzParseGID: never panics; every accepted GID is 16 bytes and formats back to the
// same text (modulo hex case). Corpus: testdata/fuzz/FuzzParseGID.
func FuzzParseGID(f *testing.F) {
	f.Add("fe80:0000:0000:0000:f845:ecff:fe54:98f8")
	f.Add("0000:0000:0000:0000:0000:ffff:c612:0001")
	f.Add("0000:0000:0000:0000:0000:0000:0000:0000")
	f.Add("FE80:0000:0000:0000:F845:ECFF:FE54:98F8")
	f.Fuzz(func(t *testing.T, s string) {
		ip, err := ParseGID(s)
		if err != nil {
			if ip != nil {
				t.Fatalf("error %v with a result", err)
			}
			return
		}
		if len(ip) != 16 {
			t.Fatalf("%q: %d bytes", s, len(ip))
		}
		if back := FormatGID(ip); back != strings.ToLower(s) {
			t.Fatalf("%q formats back as %q", s, back)
		}
	})
}

// FuzzParseAttr covers the parsers of the "<n>: <NAME>" attributes, GUIDs and GID
// types: never panic, accepted values are consistent.
func FuzzParseAttr(f *testing.F) {
	for _, s := range []string{"4: ACTIVE", "1: DOWN", "5: LinkUp", "1: CA", "0c42:a103:0065:4f2a", "RoCE v2", "IB/RoCE v1", ":", "4:", "-1: X"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, name, err := parseNumbered(s); err == nil {
			if n < 0 || name == "" || name != strings.TrimSpace(name) {
				t.Fatalf("%q -> %d %q", s, n, name)
			}
		}
		if g, err := parseGUID(s); err == nil {
			if len(g) != 19 || !strings.EqualFold(g, s) {
				t.Fatalf("%q -> %q", s, g)
			}
		}
		if typ, err := ParseGIDType(s); err == nil && typ != GIDTypeRoCEv2 && typ != GIDTypeRoCEv1 {
			t.Fatalf("%q -> %q", s, typ)
		}
	})
}
