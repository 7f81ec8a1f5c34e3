package main

import (
	"io"

	"github.com/ringcap/ringcap/pkg/ingest/presence"
)

// printPresence writes the presence record in a block as a line of text to
// w (nil: ring read without --presence, nothing to do).
func printPresence(w io.Writer, block []byte) error {
	if w == nil {
		return nil
	}
	r, err := presence.Decode(block)
	if err != nil {
		return err
	}
	outln(w, r.String())
	return nil
}
