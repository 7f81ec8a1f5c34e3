package pattern

import (
	"bytes"
	"testing"
)

// The stream is position-addressable: any sub-slice generated on its own matches the
// same bytes of one long generation, for every alignment.
func TestFillIsPositionAddressable(t *testing.T) {
	t.Parallel()
	const seed = 42
	whole := make([]byte, 1000)
	Fill(whole, seed, 0)
	for start := 0; start < 40; start++ {
		for _, n := range []int{0, 1, 7, 8, 9, 63, 500} {
			part := make([]byte, n)
			Fill(part, seed, uint64(start))
			if !bytes.Equal(part, whole[start:start+n]) {
				t.Fatalf("Fill(offset %d, len %d) differs from the whole stream", start, n)
			}
			if bad, ok := Verify(whole[start:start+n], seed, uint64(start)); !ok {
				t.Fatalf("Verify(offset %d, len %d) failed at %d", start, n, bad)
			}
		}
	}
	for o := 0; o < len(whole); o++ {
		if Byte(seed, uint64(o)) != whole[o] {
			t.Fatalf("Byte(%d) = %#x, Fill gave %#x", o, Byte(seed, uint64(o)), whole[o])
		}
	}
}

func TestVerifyFindsFirstBadByte(t *testing.T) {
	t.Parallel()
	buf := make([]byte, 257)
	for _, off := range []uint64{0, 3, 1 << 40} {
		for _, bad := range []int{0, 1, 7, 8, 100, 255, 256} {
			Fill(buf, 7, off)
			buf[bad] ^= 0x01
			got, ok := Verify(buf, 7, off)
			if ok || got != bad {
				t.Errorf("offset %d: corrupted byte %d, Verify = (%d, %v)", off, bad, got, ok)
			}
		}
	}
}

func TestSeedsAndOffsetsDiffer(t *testing.T) {
	t.Parallel()
	a, b := make([]byte, 64), make([]byte, 64)
	Fill(a, 1, 0)
	Fill(b, 2, 0)
	if bytes.Equal(a, b) {
		t.Fatal("seeds 1 and 2 give the same stream")
	}
	Fill(b, 1, 64)
	if bytes.Equal(a, b) {
		t.Fatal("offsets 0 and 64 give the same bytes")
	}
	if _, ok := Verify(a, 1, 8); ok {
		t.Fatal("Verify accepted the stream at the wrong offset")
	}
}

func BenchmarkFill(b *testing.B) {
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	for i := 0; i < b.N; i++ {
		Fill(buf, 1, uint64(i)*uint64(len(buf)))
	}
}

func BenchmarkVerify(b *testing.B) {
	buf := make([]byte, 1<<20)
	Fill(buf, 1, 0)
	b.SetBytes(int64(len(buf)))
	for i := 0; i < b.N; i++ {
		if _, ok := Verify(buf, 1, 0); !ok {
			b.Fatal("mismatch")
		}
	}
}
