package main

import (
	"fmt"
	"strconv"
	"strings"
)

// byteSize is a flag value for byte counts: a plain number of bytes, or a number with a binary
// suffix K, M, G or T (also written Ki/KiB, Mi/MiB, ...), e.g. "256M" = 268435456.
type byteSize uint64

var sizeSuffixes = []struct {
	suffix string
	shift  uint
}{{"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}}

func parseByteSize(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "i")
	shift := uint(0)
	for _, u := range sizeSuffixes {
		if strings.HasSuffix(strings.ToUpper(t), u.suffix) {
			t, shift = t[:len(t)-1], u.shift
			break
		}
	}
	n, err := strconv.ParseUint(t, 10, 64)
	if err != nil || t == "" {
		return 0, fmt.Errorf("size %q: want a number of bytes, optionally with K, M, G or T (binary) suffix", s)
	}
	if n > (^uint64(0))>>shift {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return n << shift, nil
}

func (b *byteSize) String() string { return strconv.FormatUint(uint64(*b), 10) }

func (b *byteSize) Set(s string) error {
	n, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

func (b *byteSize) Type() string { return "size" }
