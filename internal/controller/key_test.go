package controller

import (
	"slices"
	"testing"
)

// A key the API accepts with an upper-case 0X reaches the receiver and the readers as
// the ringcap CLI prints keys: lower-case hex without 0x.
func TestUpperCaseKeyPrefix(t *testing.T) {
	for in, want := range map[string]string{"0XDADA": "dada", "0X7E50": "7e50", "0xEADA": "eada", "beef": "beef", "": "dada"} {
		if got := NormalizeKey(in); got != want {
			t.Errorf("NormalizeKey(%q) = %q, want %q", in, got, want)
		}
	}
	rc := defaulted("c")
	rc.Spec.Ring.Key = "0XDADA"
	if args := ReceiverArgs(rc); !slices.Equal(args[:3], []string{"recv", "-k", "dada"}) {
		t.Errorf("receiver args %q, want recv -k dada ...", args)
	}
}
