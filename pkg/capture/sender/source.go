package sender

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/ringcap/ringcap/pkg/pattern"
)

// Source produces the stream. Fill writes the stream bytes starting at
// offset into dst and returns how many it wrote; fewer than len(dst) means
// the stream ends there. A plain Source is asked for offsets in increasing
// order; a RandomAccessSource in any order.
type Source interface {
	Fill(dst []byte, offset uint64) (int, error)
}

// RandomAccessSource is a Source that can fill any offset at any time. With
// one the sender lets every queue pair run ahead on its own (a stalled queue
// pair delays only its own slices); a plain Source keeps strict slice order.
type RandomAccessSource interface {
	Source
	RandomAccess()
}

// PatternSource is the deterministic test stream of pkg/pattern, which any
// reader can verify (`ringcap ring read --verify SEED`).
type PatternSource struct{ Seed uint64 }

// Fill implements Source.
func (p PatternSource) Fill(dst []byte, offset uint64) (int, error) {
	pattern.Fill(dst, p.Seed, offset)
	return len(dst), nil
}

// RandomAccess implements RandomAccessSource.
func (PatternSource) RandomAccess() {}

// ReaderSource streams any reader (a pipe, a socket), in order.
type ReaderSource struct{ R io.Reader }

// Fill implements Source.
func (f ReaderSource) Fill(dst []byte, _ uint64) (int, error) {
	n, err := io.ReadFull(f.R, dst)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil
	}
	return n, err
}

// FileSource streams a regular file (any io.ReaderAt), stream byte k being
// byte k of the file.
type FileSource struct{ R io.ReaderAt }

// Fill implements Source.
func (f FileSource) Fill(dst []byte, offset uint64) (int, error) {
	if offset > math.MaxInt64 {
		return 0, nil
	}
	n, err := f.R.ReadAt(dst, int64(offset))
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

// RandomAccess implements RandomAccessSource.
func (FileSource) RandomAccess() {}

// NoFillSource leaves the send buffers as they are (zeros), as perftest does:
// for benchmarks that measure the transport, not the data generator.
type NoFillSource struct{}

// Fill implements Source.
func (NoFillSource) Fill(dst []byte, _ uint64) (int, error) { return len(dst), nil }

// RandomAccess implements RandomAccessSource.
func (NoFillSource) RandomAccess() {}

// OpenFile sets cfg.Source to the file at path: a FileSource for a regular
// file (whose size is the stream length when cfg has neither Bytes nor
// Duration), else a ReaderSource (a pipe, a device). closeSource closes it.
func OpenFile(path string, cfg *Config) (closeSource func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open --file: %w", err)
	}
	closeSource = func() { _ = f.Close() }
	st, err := f.Stat()
	if err != nil {
		closeSource()
		return nil, fmt.Errorf("stat --file: %w", err)
	}
	if !st.Mode().IsRegular() {
		cfg.Source = ReaderSource{R: f}
		return closeSource, nil
	}
	if cfg.Bytes == 0 && cfg.Duration == 0 {
		if st.Size() == 0 {
			closeSource()
			return nil, fmt.Errorf("--file %s is empty", path)
		}
		cfg.Bytes = uint64(st.Size())
	}
	cfg.Source = FileSource{R: f}
	return closeSource, nil
}
