package ofi

import (
	"errors"
	"strings"
	"testing"
)

func TestBitStrings(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{Caps(0).String(), "[]"},
		{(CapMsg | CapRMA | CapRemoteComm).String(), "[FI_MSG FI_RMA FI_REMOTE_COMM]"},
		{(CapRemoteWrite | flagRemoteCQData | 1<<63).String(), "[FI_REMOTE_WRITE FI_REMOTE_CQ_DATA 0x8000000000000000]"},
		{(ModeRxCQData | ModeContext).String(), "[FI_RX_CQ_DATA FI_CONTEXT]"},
		{(MRVirtAddr | MRProvKey | MRLocal | MRAllocated).String(), "[FI_MR_LOCAL FI_MR_VIRT_ADDR FI_MR_ALLOCATED FI_MR_PROV_KEY]"},
		{MREndpoint.String(), "[FI_MR_ENDPOINT]"},
		{ProgressManual.String(), "manual"},
		{(OrderSAS | OrderWAW | 1<<16).String(), "[FI_ORDER_WAW FI_ORDER_SAS FI_ORDER_DATA]"},
		{Progress(9).String(), "unspec"},
		{ThreadDomain.String(), "FI_THREAD_DOMAIN"},
		{Threading(9).String(), "FI_THREAD_UNSPEC"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestCallErrorNamesTheCallAndMatchesErrAgain(t *testing.T) {
	err := error(&CallError{Call: "fi_writedata", Errno: eagain, Text: "Resource temporarily unavailable"})
	if !errors.Is(err, ErrAgain) {
		t.Errorf("%v does not match ErrAgain", err)
	}
	if !strings.Contains(err.Error(), "fi_writedata") {
		t.Errorf("%q does not name the call", err)
	}
	if errors.Is(&CallError{Call: "fi_send", Errno: 5}, ErrAgain) {
		t.Error("EIO matches ErrAgain")
	}
}

func TestCompletionErrorText(t *testing.T) {
	e := &CompletionError{ID: 3, Flags: CapRMA | CapWrite, Errno: 5, ProvErrno: -13, Text: "bad key"}
	for _, w := range []string{"write (fi_write/fi_writedata) 3", "fi_cq_readerr", "FI_RMA", "bad key", "errno 5"} {
		if !strings.Contains(e.Error(), w) {
			t.Errorf("%q lacks %q", e.Error(), w)
		}
	}
}

func TestOpName(t *testing.T) {
	for f, want := range map[Caps]string{
		CapRMA | CapWrite: "write (fi_write/fi_writedata)",
		CapRMA | CapRemoteWrite | Caps(flagRemoteCQData): "remote write (fi_write/fi_writedata at the peer)",
		CapRMA | CapRead: "read (fi_read)",
		CapMsg | CapRecv: "receive (fi_recv)",
		CapMsg | CapSend: "send (fi_send/fi_senddata)",
		0:                "operation",
	} {
		if got := OpName(f); got != want {
			t.Errorf("OpName(%v) = %q, want %q", f, got, want)
		}
	}
}

// Endpoints with a completion queue each may go to threads of their own
// unless the domain asks for every call to be serialised (or says nothing).
func TestThreadingPerEndpoint(t *testing.T) {
	for _, c := range []struct {
		t    Threading
		want bool
	}{
		{ThreadSafe, true}, {ThreadFID, true}, {ThreadEndpoint, true}, {ThreadCompletion, true},
		{ThreadDomain, false}, {ThreadUnspec, false}, {Threading(9), false},
	} {
		if got := c.t.PerEndpoint(); got != c.want {
			t.Errorf("%v: PerEndpoint %v, want %v", c.t, got, c.want)
		}
	}
}
