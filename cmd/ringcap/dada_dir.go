package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ringcap/ringcap/pkg/dada"
)

// ring read --dada-dir: observations written as PSRDADA's dada_dbdisk writes them (see
// docs/ring.md, "Writing PSRDADA files"). Each file is the observation's header (HDR_SIZE
// bytes, with OBS_OFFSET, FILE_SIZE and FILE_NUMBER for that file) followed by up to
// FILE_SIZE data bytes, named UTC_START_OBS_OFFSET.FILE_NUMBER.dada. A file is written under
// its name plus partSuffix and renamed once complete and synced.

// partSuffix marks a file still being written (or left by a reader that failed).
const partSuffix = ".part"

// dbdiskBytesPerSecond is dada_dbdisk's BYTES_PER_SECOND when the header has none; with no
// FILE_SIZE either, a file holds 10 seconds of data.
const dbdiskBytesPerSecond = 64000000

// maxHDRSize bounds HDR_SIZE: a larger one is a corrupt header, not a big one.
const maxHDRSize = 64 << 20

// checkDadaDir says whether dir is a directory ring read can create files in.
func checkDadaDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("--dada-dir: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("--dada-dir %s: not a directory", dir)
	}
	f, err := os.CreateTemp(dir, ".ringcap-probe-*")
	if err != nil {
		return fmt.Errorf("--dada-dir %s: not writable: %w", dir, err)
	}
	_ = f.Close()
	return os.Remove(f.Name())
}

// dbdiskFileSize is the data bytes of the file starting at stream byte off, as dada_dbdisk
// computes it: FILE_SIZE, else 10 × BYTES_PER_SECOND, moved to the nearest multiple of
// RESOLUTION at the file's end.
func dbdiskFileSize(h *dada.Header, off uint64) (uint64, error) {
	size, err := h.FileSize()
	if err != nil && !errors.Is(err, dada.ErrNoKey) {
		return 0, err
	}
	if size == 0 {
		bps, err := h.BytesPerSecond()
		switch {
		case errors.Is(err, dada.ErrNoKey):
			bps = dbdiskBytesPerSecond
		case err != nil:
			return 0, err
		case bps < 1:
			return 0, fmt.Errorf("header BYTES_PER_SECOND %g: want at least 1 (no FILE_SIZE to split files at)", bps)
		}
		size = 10 * uint64(bps)
	}
	res, err := h.GetUint("RESOLUTION")
	if err != nil && !errors.Is(err, dada.ErrNoKey) {
		return 0, err
	}
	if res > 1 {
		gap := (off + size) % res
		size -= gap
		if gap > res/2 {
			size += res
		}
		if size == 0 {
			size = res
		}
	}
	return size, nil
}

// dadaFileName is dada_dbdisk's file name.
func dadaFileName(utc string, off uint64, number int) string {
	return fmt.Sprintf("%s_%016d.%06d.dada", utc, off, number)
}

// dadaDir writes the observations of one reader into a directory.
type dadaDir struct {
	dir      string
	hdrBlock int // the header ring's block size: the file header's size when HDR_SIZE is absent
	// dada_dbdisk's FILE_NUMBER: 0, or one more than the last file's when this one has the
	// same UTC_START and OBS_OFFSET (an observation repeated).
	lastUTC   string
	lastStart uint64
	number    int
	obs       obsFiles
}

// obsFiles is the observation being written.
type obsFiles struct {
	hdr     *dada.Header
	hdrSize int
	utc     string
	next    uint64   // stream byte (OBS_OFFSET) of the next data byte
	f       *os.File // the file being written; nil between files
	name    string   // its final name
	start   uint64   // its first stream byte
	size    uint64   // its FILE_SIZE: data bytes when complete
}

func newDadaDir(dir string, hdrBlock int) *dadaDir {
	return &dadaDir{dir: dir, hdrBlock: hdrBlock}
}

// begin starts an observation from its header; resumed is how many of its bytes an
// earlier reader consumed (the header's OBS_OFFSET already counts them, see
// dada.Resume), 0 for an observation read from its start.
func (d *dadaDir) begin(hdr []byte, resumed uint64) error {
	h, err := dada.ParseHeader(hdr)
	if err != nil {
		return fmt.Errorf("dada file header: %w", err)
	}
	o := obsFiles{hdr: h, hdrSize: d.hdrBlock, utc: "UNKNOWN"}
	if n, err := h.HDRSize(); err == nil && n >= h.Len() && n <= maxHDRSize {
		o.hdrSize = n
	}
	if v, ok := h.Get("UTC_START"); ok {
		o.utc = v
	}
	if strings.ContainsAny(o.utc, "/\x00") || o.utc == "." || o.utc == ".." {
		return fmt.Errorf("header UTC_START %q cannot be part of a file name", o.utc)
	}
	if o.next, err = h.OBSOffset(); err != nil && !errors.Is(err, dada.ErrNoKey) {
		return fmt.Errorf("dada file header: %w", err)
	}
	o.start, o.size = o.next, 0
	d.obs = o
	if resumed > 0 {
		return d.resume(o.next-resumed, resumed)
	}
	return nil
}

// resume places an observation taken over at stream byte origin+done: the file the
// uninterrupted reader would be writing there is continued from its part file when that
// holds the bytes before; when the file was completed, its bytes are skipped; otherwise a
// new file starts at the resumed byte.
func (d *dadaDir) resume(origin, done uint64) error {
	o := &d.obs
	start, size := origin, uint64(0)
	for {
		var err error
		if size, err = dbdiskFileSize(o.hdr, start); err != nil {
			return err
		}
		if o.next < start+size {
			break
		}
		start += size
	}
	if start == o.next {
		return nil
	}
	name := filepath.Join(d.dir, dadaFileName(o.utc, start, 0))
	want := int64(o.hdrSize) + int64(o.next-start)
	if st, err := os.Stat(name); err == nil && st.Size() == int64(o.hdrSize)+int64(size) {
		o.start = start + size // complete: skip to its end
		return nil
	}
	f, err := continuePart(name+partSuffix, want)
	if err != nil {
		return fmt.Errorf("continue %s at observation byte %d: %w", name+partSuffix, o.next, err)
	}
	if f == nil {
		return nil // no part file to continue: a new file at the resumed byte
	}
	o.f, o.name, o.start, o.size = f, name, start, size
	d.lastUTC, d.lastStart, d.number = o.utc, start, 0
	return nil
}

// continuePart opens the part file at path for writing from byte want, cutting what it
// holds beyond; it returns nil when there is no such file, or it holds fewer bytes.
func continuePart(path string, want int64) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil || st.Size() < want {
		return nil, nil //nolint:nilerr // nothing to continue: not an error
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(want); err != nil {
		_ = f.Close()
		return nil, err
	}
	if _, err := f.Seek(want, io.SeekStart); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// write writes a data block's bytes, opening and completing files as they fill.
func (d *dadaDir) write(p []byte) error {
	o := &d.obs
	for len(p) > 0 {
		if o.next < o.start { // resumed inside a completed file
			c := min(uint64(len(p)), o.start-o.next)
			p, o.next = p[c:], o.next+c
			continue
		}
		if o.f == nil {
			if err := d.open(); err != nil {
				return err
			}
		}
		c := min(uint64(len(p)), o.start+o.size-o.next)
		if n, err := o.f.Write(p[:c]); err != nil {
			return fmt.Errorf("write %s at observation byte %d: %w", o.f.Name(), o.next+uint64(n), err)
		}
		p, o.next = p[c:], o.next+c
		if o.next == o.start+o.size {
			if err := d.complete(); err != nil {
				return err
			}
		}
	}
	return nil
}

// open starts the file holding stream byte o.next: its header, under the part name.
func (d *dadaDir) open() error {
	o := &d.obs
	size, err := dbdiskFileSize(o.hdr, o.next)
	if err != nil {
		return err
	}
	if o.utc == d.lastUTC && o.next == d.lastStart {
		d.number++
	} else {
		d.number = 0
	}
	d.lastUTC, d.lastStart = o.utc, o.next
	name := filepath.Join(d.dir, dadaFileName(o.utc, o.next, d.number))
	if _, err := os.Lstat(name); err == nil {
		return fmt.Errorf("%s exists: ring read does not overwrite files (nor does dada_dbdisk without -W)", name)
	}
	hdr, err := d.fileHeader(o.next, size)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(name+partSuffix, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", name+partSuffix, err)
	}
	if _, err := f.Write(hdr); err != nil {
		_ = f.Close()
		return fmt.Errorf("write the header of %s at observation byte %d: %w", f.Name(), o.next, err)
	}
	o.f, o.name, o.start, o.size = f, name, o.next, size
	return nil
}

// fileHeader is the observation's header for the file starting at stream byte off with
// size data bytes.
func (d *dadaDir) fileHeader(off, size uint64) ([]byte, error) {
	h := d.obs.hdr
	for _, kv := range [][2]string{
		{"OBS_OFFSET", strconv.FormatUint(off, 10)},
		{"FILE_SIZE", strconv.FormatUint(size, 10)},
		{"FILE_NUMBER", strconv.Itoa(d.number)},
	} {
		if err := h.Set(kv[0], kv[1]); err != nil {
			return nil, fmt.Errorf("dada file header: %w", err)
		}
	}
	b, err := h.Bytes(d.obs.hdrSize)
	if err != nil {
		return nil, fmt.Errorf("dada file header: %w", err)
	}
	return b, nil
}

// complete ends the current file: a short last file's FILE_SIZE becomes the bytes it holds;
// then it is synced, renamed to its final name, and the directory synced.
func (d *dadaDir) complete() error {
	o := &d.obs
	f := o.f
	o.f = nil
	err := d.settleSize(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), o.name)
	}
	if err == nil {
		err = syncDir(d.dir)
	}
	if err != nil {
		return fmt.Errorf("complete %s at observation byte %d: %w", o.name, o.next, err)
	}
	return nil
}

// settleSize rewrites the header of a file that ends before its FILE_SIZE.
func (d *dadaDir) settleSize(f *os.File) error {
	o := &d.obs
	if o.next-o.start == o.size {
		return nil
	}
	hdr, err := d.fileHeader(o.start, o.next-o.start)
	if err == nil {
		_, err = f.WriteAt(hdr, 0)
	}
	return err
}

// end completes the observation's last file.
func (d *dadaDir) end() error {
	if d.obs.f == nil {
		return nil
	}
	return d.complete()
}

// abort closes a file left incomplete by a failure; its part file stays, so the bytes it
// holds are not lost (and a reader resuming the observation continues it).
func (d *dadaDir) abort() {
	if d == nil || d.obs.f == nil {
		return
	}
	_ = d.obs.f.Close()
	d.obs.f = nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
