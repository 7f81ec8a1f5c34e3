package stream

import (
	"testing"

	"github.com/ringcap/ringcap/pkg/capture/headerrules"
	"github.com/ringcap/ringcap/pkg/dada"
)

// template is a receiver's template as headerrules builds it, with a
// OBS_OFFSET and an NBIT the pipeline replaces.
func template(t *testing.T) *dada.Header {
	t.Helper()
	hd, err := headerrules.Template([]byte("HDR_VERSION 1.0\nSOURCE J0437-4715\nOBS_OFFSET 77\nNBIT 32\nNPOL 2\n"), [][2]string{{"TELESCOPE", "MeerKAT"}})
	if err != nil {
		t.Fatal(err)
	}
	return hd
}
