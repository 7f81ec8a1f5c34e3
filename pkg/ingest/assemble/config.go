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
	// ResyncAfter is how many out-of-window payloads in a row show that the
	// stream itself has moved on (a gap longer than the window: an outage, a
	// burst the kernel dropped): the next one advances the window to it, the
	// blocks in between handed over zero-filled. 0: DefaultResyncAfter.
	ResyncAfter int
	// MaxJump is the most blocks such a resync may zero-fill; a stream that
	// jumps further has left this observation, and Put fails with a
	// *JumpError. 0: DefaultMaxJumpRings ring sizes.
	MaxJump int
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
	case c.MaxAhead < 0 || c.ResyncAfter < 0 || c.MaxJump < 0:
		return fmt.Errorf("assemble: MaxAhead %d, ResyncAfter %d, MaxJump %d: want none negative", c.MaxAhead, c.ResyncAfter, c.MaxJump)
	}
	return nil
}
