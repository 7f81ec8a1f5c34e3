package fabric

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

type closer struct {
	err    error
	closed int
}

func (c *closer) Close() error { c.closed++; return c.err }

func TestCloseLoggedWarnsOnlyOfAFailure(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	ok, bad := &closer{}, &closer{err: errors.New("fi_close: Device or resource busy")}
	CloseLogged(log, "the sender's fabric", ok)
	if ok.closed != 1 || out.Len() != 0 {
		t.Errorf("a clean close: closed %d times, logged %q", ok.closed, out.String())
	}
	CloseLogged(log, "the sender's fabric", bad)
	if got := out.String(); bad.closed != 1 || !strings.Contains(got, `level=WARN msg="Could not close the sender's fabric" err="fi_close: Device or resource busy"`) {
		t.Errorf("a failed close: closed %d times, logged %q", bad.closed, got)
	}
}
