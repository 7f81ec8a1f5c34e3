package verbs

import (
	"errors"
	"strings"
	"testing"
)

func TestMTUBytes(t *testing.T) {
	for m, want := range map[MTU]int{MTU256: 256, MTU512: 512, MTU1024: 1024, MTU2048: 2048, MTU4096: 4096, 0: 0, 6: 0} {
		if got := m.Bytes(); got != want {
			t.Errorf("MTU(%d).Bytes() = %d, want %d", int(m), got, want)
		}
	}
}

func TestCompletionErrorNamesStatus(t *testing.T) {
	wc := WorkCompletion{ID: 7, Status: WCRetryExcErr, QPN: 17, VendorErr: 0x81}
	err := wc.Err()
	var ce *CompletionError
	if !errors.As(err, &ce) || ce.Status != WCRetryExcErr {
		t.Fatalf("Err() = %v, want a *CompletionError with RETRY_EXC_ERR", err)
	}
	for _, want := range []string{"IBV_WC_RETRY_EXC_ERR", "retry counter exceeded", "wr_id=7", "qp=17", "vendor_err=0x81"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not contain %q", err, want)
		}
	}
	if (&WorkCompletion{Status: WCSuccess}).Err() != nil {
		t.Error("a successful completion has an error")
	}
	if got := WCStatus(23).String(); got != "TM_RNDV_INCOMPLETE" {
		t.Errorf("WCStatus(23) = %q", got)
	}
	if got := WCStatus(99).String(); got != "WCStatus(99)" {
		t.Errorf("WCStatus(99) = %q", got)
	}
}

func TestGIDTypeSysfsName(t *testing.T) {
	for typ, want := range map[GIDType]string{GIDTypeIB: "IB/RoCE v1", GIDTypeRoCEv1: "IB/RoCE v1", GIDTypeRoCEv2: "RoCE v2"} {
		if got := typ.SysfsName(); got != want {
			t.Errorf("%v.SysfsName() = %q, want %q", typ, got, want)
		}
	}
}
