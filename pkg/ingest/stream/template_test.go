package stream

import (
	"errors"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/pkg/capture/headerrules"
	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/ingest/vdif"
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

// CheckHeader refuses, before any packet, a template that the stream's keys
// at their widest would push past the header block; a header that fits at
// the widest fits every stream.
func TestCheckHeader(t *testing.T) {
	spead := Config{Protocol: SPEAD, SPEAD: speadRule(), SPEADTime: SPEADTime{SyncTime: 1, SampleRate: 1}, Template: template(t), HeaderBytes: 4096}
	vdifc := Config{Protocol: VDIF, VDIF: vdif.Rule{FramesPerSecond: 1, Threads: 1}, Template: template(t), HeaderBytes: 4096}
	for _, c := range []Config{spead, vdifc} {
		if err := c.CheckHeader(); err != nil {
			t.Errorf("%s: %v", c.Protocol, err)
		}
		big, err := dada.ParseHeader([]byte("COMMENT " + strings.Repeat("x", 3800) + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		c.Template = big
		if err := c.CheckHeader(); !errors.Is(err, headerrules.ErrTooLarge) {
			t.Errorf("%s with a large template: %v, want ErrTooLarge", c.Protocol, err)
		}
		c.HeaderBytes = 0
		if err := c.CheckHeader(); err == nil {
			t.Errorf("%s without a header block: accepted", c.Protocol)
		}
	}
}
