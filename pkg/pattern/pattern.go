package pattern

import "encoding/binary"

// word returns the 8 stream bytes at offsets 8*i .. 8*i+7 as a little-endian word.
func word(seed, i uint64) uint64 {
	z := seed ^ i
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Byte returns the stream byte at absolute offset o.
func Byte(seed, o uint64) byte { return byte(word(seed, o/8) >> (8 * (o % 8))) }

// Fill writes the stream bytes [offset, offset+len(dst)) into dst.
func Fill(dst []byte, seed, offset uint64) {
	o := offset
	// Unaligned head.
	for len(dst) > 0 && o%8 != 0 {
		dst[0] = Byte(seed, o)
		dst = dst[1:]
		o++
	}
	i := o / 8
	for len(dst) >= 8 {
		binary.LittleEndian.PutUint64(dst, word(seed, i))
		dst = dst[8:]
		i++
	}
	o = i * 8
	for k := range dst {
		dst[k] = Byte(seed, o+uint64(k))
	}
}

// Verify checks that src holds the stream bytes [offset, offset+len(src)). It returns ok,
// or the index in src of the first wrong byte.
func Verify(src []byte, seed, offset uint64) (firstBad int, ok bool) {
	o := offset
	n := 0
	for n < len(src) && (o+uint64(n))%8 != 0 {
		if src[n] != Byte(seed, o+uint64(n)) {
			return n, false
		}
		n++
	}
	i := (o + uint64(n)) / 8
	for len(src)-n >= 8 {
		if binary.LittleEndian.Uint64(src[n:]) != word(seed, i) {
			for k := 0; k < 8; k++ {
				if src[n+k] != Byte(seed, i*8+uint64(k)) {
					return n + k, false
				}
			}
		}
		n += 8
		i++
	}
	for ; n < len(src); n++ {
		if src[n] != Byte(seed, o+uint64(n)) {
			return n, false
		}
	}
	return -1, true
}
