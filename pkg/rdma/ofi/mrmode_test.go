package ofi

import (
	"strings"
	"testing"
)

func TestRMAAddr(t *testing.T) {
	for _, c := range []struct {
		mode MRMode
		want uint64
	}{
		{0, 16},
		{MRProvKey | MRLocal, 16},
		{MRVirtAddr, 0x7000_0010},
		{MRVirtAddr | MRProvKey | MRLocal | MRAllocated, 0x7000_0010},
	} {
		if got := rmaAddr(c.mode, 0x7000_0000, 16); got != c.want {
			t.Errorf("rmaAddr(%v) = %#x, want %#x", c.mode, got, c.want)
		}
	}
}

func TestRequestKey(t *testing.T) {
	if k, used := requestKey(MRProvKey|MRVirtAddr, 5); k != 0 || used {
		t.Errorf("under FI_MR_PROV_KEY: key %d used %v, want the provider to choose", k, used)
	}
	if k, used := requestKey(MRVirtAddr, 5); k != 5 || !used {
		t.Errorf("without FI_MR_PROV_KEY: key %d used %v, want 5 used", k, used)
	}
}

func TestLocalFault(t *testing.T) {
	for _, c := range []struct {
		name  string
		mode  MRMode
		hasMR bool
		addr  uintptr
		n     int
		want  string
	}{
		{"no MR needed", MRVirtAddr, false, 0x1000, 8, ""},
		{"FI_MR_LOCAL without MR", MRLocal, false, 0x1000, 8, "FI_MR_LOCAL"},
		{"inside", MRLocal, true, 0x1010, 0xf0, ""},
		{"before", MRLocal, true, 0xff0, 8, "outside"},
		{"past the end", 0, true, 0x10f9, 8, "outside"},
		{"negative", 0, true, 0x1000, -1, "outside"},
	} {
		got := localFault(c.mode, c.hasMR, c.addr, c.n, 0x1000, 0x100)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
