package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"

	"github.com/ringcap/ringcap/pkg/dada"
)

// ring write -f FILE.dada: a PSRDADA file (dada_dbdisk's, ring read --dada-dir's) is its
// header block (HDR_SIZE bytes) then the data. --file-header says whether the input starts
// with one: auto (detect it), yes, no.

const (
	fileHeaderAuto = "auto"
	fileHeaderYes  = "yes"
	fileHeaderNo   = "no"
)

// headerProbe is how much of a file detection reads: a header's first block, up to its NUL.
const headerProbe = 64 << 10

// firstHeaderLine: a header's first line is a KEY (capitals, digits, _) and a value, or a
// comment.
var firstHeaderLine = regexp.MustCompile(`^(#[^\n]*|[A-Z][A-Z0-9_]*[ \t]+[^\n]*)\n`)

// parseFileHeader reads a PSRDADA header from the start of b, the first bytes of a file of
// size bytes: text (tabs, newlines and printable ASCII) with a first line of KEY value and
// HDR_SIZE no larger than the file, NUL padded to HDR_SIZE. It returns the header text and
// HDR_SIZE, or why b does not start with a header.
func parseFileHeader(b []byte, size int64) ([]byte, int, error) {
	if !firstHeaderLine.Match(b) {
		return nil, 0, errors.New("its first line is not a header's KEY value")
	}
	text := b[:headerTextLen(b)]
	h, err := dada.ParseHeader(text)
	if err != nil {
		return nil, 0, err
	}
	n, err := h.HDRSize()
	switch {
	case err != nil:
		return nil, 0, err
	case n < 1 || int64(n) > size:
		return nil, 0, fmt.Errorf("HDR_SIZE %d: not within the file (%d bytes)", n, size)
	case n <= len(text):
		return text[:n], n, nil // a header filling its block, the data right after it
	}
	if pad := b[len(text):min(n, len(b))]; len(bytes.Trim(pad, "\x00")) > 0 {
		return nil, 0, fmt.Errorf("byte %d within HDR_SIZE %d is neither header text nor NUL", len(text)+bytes.IndexFunc(pad, func(r rune) bool { return r != 0 }), n)
	}
	return text, n, nil
}

// headerTextLen is the length of b's leading header text: tabs, newlines, printable ASCII.
func headerTextLen(b []byte) int {
	for i, c := range b {
		if c != '\n' && c != '\t' && c != '\r' && (c < ' ' || c > '~') {
			return i
		}
	}
	return len(b)
}

// takeFileHeader applies --file-header to a regular input: when it starts with a header,
// the header is kept for the observation and the data start after HDR_SIZE bytes.
func (in *writeInput) takeFileHeader(mode string) error {
	if mode == fileHeaderNo {
		return nil
	}
	if in.size < 0 {
		if mode == fileHeaderYes {
			return fmt.Errorf("--file-header yes: %s is not a regular file", in.name)
		}
		return nil
	}
	b := make([]byte, min(int64(headerProbe), in.size))
	if _, err := in.f.ReadAt(b, in.start); err != nil && err != io.EOF {
		return fmt.Errorf("read %s: %w", in.name, err)
	}
	text, n, err := parseFileHeader(b, in.size)
	if err != nil {
		if mode == fileHeaderYes {
			return fmt.Errorf("--file-header yes: %s does not start with a PSRDADA header: %w", in.name, err)
		}
		return nil
	}
	in.header = text
	in.start += int64(n)
	in.size -= int64(n)
	return in.rewind()
}
