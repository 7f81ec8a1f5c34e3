package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/ringcap/ringcap/pkg/dada"
)

// writeInput is what ring write -f reads: a regular file, whose size is known when the
// command starts, or a stream (a pipe, FIFO, terminal, character or block device, or a
// /proc file that reports size 0), read to its end.
type writeInput struct {
	r     io.Reader
	name  string
	f     *os.File    // nil for a standard input that is not a file
	start int64       // a regular file: offset of its first byte, where each observation begins
	size  int64       // a regular file: bytes from start; -1 for a stream
	first byte        // a stream's first byte, read ahead (an empty input fails before the ring is touched)
	stop  func() bool // a file the command opened: stops closing it on interrupt
	// header: the header a PSRDADA file starts with (--file-header); start is past it
	header []byte
}

// openWriteInput opens path ("-": stdin) and, for a stream, reads its first byte. Cancelling
// ctx closes the input, which ends a read waiting on a pipe or FIFO.
func openWriteInput(ctx context.Context, path string, stdin io.Reader) (*writeInput, error) {
	in := &writeInput{r: stdin, name: "standard input", size: -1}
	if f, ok := stdin.(*os.File); ok && path == "-" {
		in.f = f
	}
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("open input: %w", err)
		}
		in.r, in.name, in.f = f, path, f
		in.stop = context.AfterFunc(ctx, func() { _ = f.Close() })
	}
	if in.f != nil {
		var err error
		if in.start, in.size, err = regularSize(in.f); err != nil {
			in.close()
			return nil, fmt.Errorf("input %s: %w", in.name, err)
		}
	}
	if in.size >= 0 {
		return in, nil
	}
	var b [1]byte
	if _, err := io.ReadFull(in.r, b[:]); err != nil {
		in.close()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("input %s is empty: no observation to write", in.name)
		}
		return nil, readFailed(ctx, in.name, 0, err)
	}
	in.first = b[0]
	return in, nil
}

// regularSize returns, for a regular file that reports a size, the offset it is read from
// and the bytes from there; else size -1 (read it to its end).
func regularSize(f *os.File) (start, size int64, err error) {
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	if !st.Mode().IsRegular() || st.Size() == 0 {
		return 0, -1, nil
	}
	if start, err = f.Seek(0, io.SeekCurrent); err != nil {
		return 0, 0, fmt.Errorf("find the read offset: %w", err)
	}
	if start >= st.Size() {
		return 0, -1, nil
	}
	return start, st.Size() - start, nil
}

// close closes a file the command opened (not stdin), unless an interrupt closed it.
func (in *writeInput) close() {
	if in.stop != nil && in.stop() {
		_ = in.f.Close()
	}
}

// rewind returns a regular file to its first byte for the next observation.
func (in *writeInput) rewind() error {
	if _, err := in.f.Seek(in.start, io.SeekStart); err != nil {
		return fmt.Errorf("rewind %s for the next observation: %w", in.name, err)
	}
	return nil
}

// writeObservation writes the input as one observation: a regular file's size bytes,
// else the stream to its end.
func (in *writeInput) writeObservation(ctx context.Context, w *dada.Writer) (uint64, uint64, error) {
	if in.size < 0 {
		return writeStream(ctx, w, in.r, in.name, in.first)
	}
	return writeFrom(ctx, w, in.r, in.name, uint64(in.size))
}

// writeStream writes r to its end as one observation, first (read ahead) its first byte.
// Each block is filled until it is full or r ends; one byte more is then read ahead, so
// that the block holding the last byte ends the observation (no empty block after
// exactly whole blocks).
func writeStream(ctx context.Context, w *dada.Writer, r io.Reader, name string, first byte) (uint64, uint64, error) {
	var off, blocks uint64
	next := []byte{first}
	for {
		b, err := w.OpenBlock(ctx)
		if err != nil {
			return off, blocks, err
		}
		b.Data[0] = next[0]
		k, err := io.ReadFull(r, b.Data[1:])
		end := errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
		if err != nil && !end {
			return off, blocks, readFailed(ctx, name, off+1+uint64(k), err)
		}
		if !end {
			if _, err := io.ReadFull(r, next); errors.Is(err, io.EOF) {
				end = true
			} else if err != nil {
				return off, blocks, readFailed(ctx, name, off+uint64(len(b.Data)), err)
			}
		}
		n := 1 + k
		off += uint64(n)
		blocks++
		if end {
			return off, blocks, w.MarkFilledEOD(n)
		}
		if err := w.MarkFilled(n); err != nil {
			return off, blocks, err
		}
	}
}

// readFailed says where reading name failed; when the command was interrupted (which
// closes the input) it says that instead.
func readFailed(ctx context.Context, name string, off uint64, err error) error {
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return fmt.Errorf("read %s at byte %d: %w", name, off, err)
}
