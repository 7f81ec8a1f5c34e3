package assemble

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// pattern is the test stream: byte i of it.
func pattern(i uint64) byte { return byte(i*31 + i>>8 + i>>16 + 1) }

// stream is a test stream of total bytes and the bytes of it that reach the
// ring (the oracle the ring's contents, the records and the counts are
// checked against).
type stream struct {
	bsize uint64
	data  []byte
	have  []bool
}

func newStream(total, bsize uint64) *stream {
	s := &stream{bsize: bsize, data: make([]byte, total), have: make([]bool, total)}
	for i := range s.data {
		s.data[i] = pattern(uint64(i))
	}
	return s
}

// packet returns the payload of n bytes at off.
func (s *stream) packet(off, n uint64) []byte { return s.data[off : off+n] }

// deliver puts the payload of n bytes at off and marks its bytes as present.
func (s *stream) deliver(t *testing.T, a *Assembler, off, n uint64) {
	t.Helper()
	s.put(t, a, off, n)
	for i := off; i < off+n; i++ {
		s.have[i] = true
	}
}

// put puts the payload of n bytes at off, expected not to be written (or
// already present).
func (s *stream) put(t *testing.T, a *Assembler, off, n uint64) {
	t.Helper()
	if err := a.Put(off, s.packet(off, n)); err != nil {
		t.Fatalf("put %d bytes at %d: %v", n, off, err)
	}
}

// expected returns what the ring must hold (the stream up to its last
// present byte, missing bytes zero) and the records of its blocks.
func (s *stream) expected() ([]byte, []Record) {
	end := uint64(len(s.have))
	for end > 0 && !s.have[end-1] {
		end--
	}
	want := make([]byte, end)
	var recs []Record
	for seq := uint64(0); seq*s.bsize < end; seq++ {
		lo, hi := seq*s.bsize, min((seq+1)*s.bsize, end)
		r := Record{Seq: seq, Expected: hi - lo, Last: hi == end}
		for i := lo; i < hi; i++ {
			if s.have[i] {
				want[i] = s.data[i]
				r.Received++
				continue
			}
			if n := len(r.Missing); n > 0 && r.Missing[n-1].Off+r.Missing[n-1].Len == i-lo {
				r.Missing[n-1].Len++
			} else {
				r.Missing = append(r.Missing, Range{Off: i - lo, Len: 1})
			}
		}
		recs = append(recs, r)
	}
	return want, recs
}

// check compares a run with the oracle: every byte, every record, the byte
// and block counts.
func (s *stream) check(t *testing.T, got run) {
	t.Helper()
	want, recs := s.expected()
	if !bytes.Equal(got.data, want) {
		t.Fatalf("the ring holds %d bytes, want %d; first difference at byte %d", len(got.data), len(want), firstDiff(got.data, want))
	}
	if !strings.Contains(string(got.hdr), "SOURCE assemble-test") {
		t.Fatalf("header %q", got.hdr)
	}
	if len(got.records) != len(recs) {
		t.Fatalf("%d records, want %d: %+v", len(got.records), len(recs), got.records)
	}
	var zero, received uint64
	for i, r := range got.records {
		w := recs[i]
		if r.Seq != w.Seq || r.Expected != w.Expected || r.Received != w.Received || r.Last != w.Last || !slices.Equal(r.Missing, w.Missing) {
			t.Fatalf("record %d = %+v, want %+v", i, r, w)
		}
		for _, m := range r.Missing {
			zero += m.Len
		}
		received += r.Received
	}
	c := got.counts
	if c.ZeroFilled != zero || c.Blocks != uint64(len(recs)) || c.ReceivedBytes != received {
		t.Fatalf("counters %+v: want %d bytes zero-filled, %d received, %d blocks", c, zero, received, len(recs))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
