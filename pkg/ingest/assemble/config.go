package assemble

import (
	"errors"
	"fmt"

	"github.com/ringcap/ringcap/pkg/capture/ring"
	"github.com/ringcap/ringcap/pkg/dada"
)

// Config is what an assembler needs: the ring's writer and blocks, and the
// window.
type Config struct {
	// Writer is the ring's writer, locked for writing by the caller, who
	// also closes it after the assembler.
	Writer ring.BlockWriter
	// Block returns the memory of ring block index (BlockBytes long at
	// least).
	Block func(index int) []byte
	// BlockBytes is the size of a ring block; RingBlocks the number of
	// blocks in the ring.
	BlockBytes int
	RingBlocks int
	// Window is the number of blocks open at once, 1..RingBlocks. A payload
	// spanning more blocks than the window is out-of-window: when payloads
	// cross block boundaries, the window needs at least 2.
	Window int
	// MaxAhead is how many blocks past the window a payload may reach and
	// still advance it; past that it is out-of-window. 0: Window.
	MaxAhead int
	// Header, if set, returns the observation's header block, written once
	// before the first block is handed over (or at Close when none was).
	Header func() ([]byte, error)
	// OnBlock, if set, receives the record of each block handed over, on
	// the goroutine that calls Put or Close; Record.Missing is only valid
	// during the call.
	OnBlock func(Record)
}

// ForDada returns a Config over a pkg/dada writer: its ring's blocks and
// geometry, a window of window blocks.
func ForDada(w *dada.Writer, window int) Config {
	d := w.HDU().Data
	return Config{Writer: ring.DadaWriter{W: w}, Block: d.Block, BlockBytes: d.BufSize(), RingBlocks: d.NBufs(), Window: window}
}

// Validate checks that the configuration can assemble a stream.
func (c Config) Validate() error {
	switch {
	case c.Writer == nil:
		return errors.New("assemble: no ring writer")
	case c.Block == nil:
		return errors.New("assemble: no ring blocks")
	case c.BlockBytes <= 0:
		return fmt.Errorf("assemble: block size %d", c.BlockBytes)
	case c.Window < 1 || c.Window > c.RingBlocks:
		return fmt.Errorf("assemble: a window of %d blocks in a ring of %d", c.Window, c.RingBlocks)
	case c.MaxAhead < 0:
		return fmt.Errorf("assemble: MaxAhead %d is negative", c.MaxAhead)
	}
	return nil
}
