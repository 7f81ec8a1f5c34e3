package main

import "testing"

func TestParseByteSize(t *testing.T) {
	good := map[string]uint64{
		"0": 0, "4096": 4096, "1K": 1 << 10, "64M": 64 << 20, "256MiB": 256 << 20, "1Gi": 1 << 30,
		"2g": 2 << 30, "1T": 1 << 40, "3KB": 3 << 10,
	}
	for in, want := range good {
		got, err := parseByteSize(in)
		if err != nil || got != want {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "M", "-1", "1.5G", "12X", "99999999999T"} {
		if got, err := parseByteSize(in); err == nil {
			t.Errorf("parseByteSize(%q) = %d, want an error", in, got)
		}
	}
}
