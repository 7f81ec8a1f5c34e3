package receiver

import (
	"github.com/ringcap/ringcap/pkg/capture/obsheader"
	"github.com/ringcap/ringcap/pkg/capture/ring"
	"github.com/ringcap/ringcap/pkg/capture/status"
	"github.com/ringcap/ringcap/pkg/dada"
)

// headerWriter is the ring's writer that puts the observation's header,
// when it goes into the ring, into the status (its main keys, UTC_START).
type headerWriter struct {
	ring.DadaWriter
	t *status.Tracker
}

// WriteHeader implements ring.BlockWriter.
func (w headerWriter) WriteHeader(hdr []byte) error {
	if err := w.DadaWriter.WriteHeader(hdr); err != nil {
		return err
	}
	if hd, err := dada.ParseHeader(hdr); err == nil {
		w.t.HeaderWritten(obsheader.StatusFields(hd))
	}
	return nil
}
