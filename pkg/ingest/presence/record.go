package presence

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ringcap/ringcap/pkg/ingest/assemble"
)

// Magic opens every record; Version is the record layout's.
const (
	Magic   = "RINGPRES"
	Version = 1
)

// DefaultGranule is the granule a receiver uses when it is given none and
// the stream's rule names no data array: ringcap send's SPEAD packet payload
// and VDIF data array (pkg/ingest/sender's DefaultPacketBytes).
const DefaultGranule = 8192

// HeaderBytes is the size of a record's fixed header, before its bitmap.
const HeaderBytes = 56

// flagLast marks the record of the block that ends the observation.
const flagLast = 1

// ErrRecord is wrapped by Decode's errors: the bytes are not a record.
var ErrRecord = errors.New("not a presence record")

// Record is one decoded presence record.
type Record struct {
	Seq      uint64 // the data block's sequence number within the observation
	Expected uint64 // the data block's bytes
	Received uint64 // the bytes packets carried into it
	Granule  uint64 // bytes per granule
	Granules uint64 // granules in the block, ceil(Expected/Granule)
	Last     bool   // the block ends the observation
	Bitmap   []byte // one bit per granule, 1 = received
}

// Granules is the number of granules of a data block of n bytes.
func Granules(n, granule uint64) uint64 { return (n + granule - 1) / granule }

// Bytes is the size of the record of a data block of n bytes: the size of a
// presence block for data blocks of n bytes.
func Bytes(n, granule uint64) uint64 { return HeaderBytes + (Granules(n, granule)+7)/8 }

// Encode writes the record of the block rec describes into dst, granules of
// granule bytes, and returns its length. dst must hold Bytes(rec.Expected,
// granule) bytes.
func Encode(dst []byte, rec assemble.Record, granule uint64) (int, error) {
	if granule == 0 {
		return 0, errors.New("presence: a granule of 0 bytes")
	}
	n := Granules(rec.Expected, granule)
	size := Bytes(rec.Expected, granule)
	if uint64(len(dst)) < size {
		return 0, fmt.Errorf("presence: the record of block %d takes %d bytes, more than the %d given", rec.Seq, size, len(dst))
	}
	copy(dst, Magic)
	le := binary.LittleEndian
	var flags uint32
	if rec.Last {
		flags |= flagLast
	}
	le.PutUint32(dst[8:], Version)
	le.PutUint32(dst[12:], flags)
	le.PutUint64(dst[16:], rec.Seq)
	le.PutUint64(dst[24:], rec.Expected)
	le.PutUint64(dst[32:], rec.Received)
	le.PutUint64(dst[40:], granule)
	le.PutUint64(dst[48:], n)
	bm := dst[HeaderBytes:size]
	fill(bm, n)
	for _, m := range rec.Missing {
		if m.Len == 0 || m.Off >= rec.Expected {
			continue
		}
		end := min(m.Off+m.Len, rec.Expected)
		clearBits(bm, m.Off/granule, (end-1)/granule+1)
	}
	return int(size), nil
}

// Decode reads a record from b (a presence block's bytes). The record's
// Bitmap is b's.
func Decode(b []byte) (Record, error) {
	if len(b) < HeaderBytes || string(b[:8]) != Magic {
		return Record{}, fmt.Errorf("presence: %d bytes without the magic %q: %w", len(b), Magic, ErrRecord)
	}
	le := binary.LittleEndian
	if v := le.Uint32(b[8:]); v != Version {
		return Record{}, fmt.Errorf("presence: record version %d, want %d: %w", v, Version, ErrRecord)
	}
	r := Record{
		Last: le.Uint32(b[12:])&flagLast != 0, Seq: le.Uint64(b[16:]), Expected: le.Uint64(b[24:]),
		Received: le.Uint64(b[32:]), Granule: le.Uint64(b[40:]), Granules: le.Uint64(b[48:]),
	}
	switch {
	case r.Granule == 0:
		return Record{}, fmt.Errorf("presence: block %d: a granule of 0 bytes: %w", r.Seq, ErrRecord)
	case r.Granules != Granules(r.Expected, r.Granule):
		return Record{}, fmt.Errorf("presence: block %d: %d granules of %d bytes for %d bytes: %w", r.Seq, r.Granules, r.Granule, r.Expected, ErrRecord)
	case r.Received > r.Expected:
		return Record{}, fmt.Errorf("presence: block %d: %d bytes received of %d: %w", r.Seq, r.Received, r.Expected, ErrRecord)
	}
	size := Bytes(r.Expected, r.Granule)
	if uint64(len(b)) < size {
		return Record{}, fmt.Errorf("presence: block %d: the record takes %d bytes, %d given: %w", r.Seq, size, len(b), ErrRecord)
	}
	r.Bitmap = b[HeaderBytes:size]
	return r, nil
}

// Present reports whether every byte of granule k was received.
func (r Record) Present(k uint64) bool {
	return k < r.Granules && r.Bitmap[k/8]&(1<<(k%8)) != 0
}
