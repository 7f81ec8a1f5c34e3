package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/pattern"
)

// block pads text with NULs to n bytes and appends data.
func block(text string, n int, data []byte) []byte {
	b := make([]byte, n)
	copy(b, text)
	return append(b, data...)
}

func TestParseFileHeader(t *testing.T) {
	data := make([]byte, 8192)
	pattern.Fill(data, 1, 0)
	full := "HDR_SIZE 64\nSOURCE x\n" + strings.Repeat("#", 64-21-1) + "\n" // exactly 64 bytes
	for _, c := range []struct {
		name string
		b    []byte
		n    int // HDR_SIZE, 0: no header
	}{
		{"dbdisk-file", block("HDR_VERSION 1.0\nHDR_SIZE 4096\nSOURCE J0437-4715\n", 4096, data), 4096},
		{"comment-first", block("# made by hand\nHDR_SIZE 512\n", 512, data[:10]), 512},
		{"header-fills-its-block", append([]byte(full), data...), 64},
		{"raw-data", data, 0},
		{"text-without-hdr-size", []byte("SOURCE x\nFREQ 1400\n"), 0},
		{"hdr-size-beyond-the-file", block("HDR_SIZE 4096\n", 100, nil), 0},
		{"hdr-size-zero", block("HDR_SIZE 0\n", 100, nil), 0},
		{"hdr-size-not-a-number", block("HDR_SIZE big\n", 100, nil), 0},
		{"binary-in-the-header", block("HDR_SIZE 64\nSOURCE \x01\x02\n", 64, nil), 0},
		{"lower-case-first-line", block("hello world\nHDR_SIZE 64\n", 64, nil), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			text, n, err := parseFileHeader(c.b[:min(len(c.b), headerProbe)], int64(len(c.b)))
			if (err == nil) != (c.n > 0) || n != c.n && c.n > 0 {
				t.Fatalf("HDR_SIZE %d, %v; want %d", n, err, c.n)
			}
			if c.n > 0 && (bytes.IndexByte(text, 0) >= 0 || len(text) > c.n) {
				t.Errorf("header text %q", text)
			}
		})
	}
}

// ring write -f FILE.dada round trip: ring write (pattern) → ring read --dada-dir (three
// files) → ring write -f each file into another ring → ring read --verify: every file's
// data verifies at its OBS_OFFSET, byte-exact, and the header keeps the file's keys, with
// FILE_SIZE its data bytes and HDR_SIZE the ring's header block.
func TestRingWriteDadaFileRoundTrip(t *testing.T) {
	const total, fileSize = 250000, 100000
	k1 := createRing(t, "-b", "65536", "-n", "4")
	k2 := createRing(t, "-b", "32768", "-n", "4", "-a", "8192")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := startRead(t, ctx, k1, "-s", "--dada-dir", dir)
	mustRun(t, "ring", "write", "-k", k1, "--seed", "8", "--bytes", strconv.Itoa(total),
		"--header", "FILE_SIZE="+strconv.Itoa(fileSize), "--header", "UTC_START="+testUTC, "--header", "SOURCE=J0437-4715")
	if r := <-done; r.err != nil {
		t.Fatalf("read --dada-dir: %v\n%s", r.err, r.errs)
	}
	files := readDadaDir(t, dir)
	if len(files) != 3 {
		t.Fatalf("files %v, want 3", names(files))
	}
	for i, f := range files {
		hdrOut := filepath.Join(t.TempDir(), "hdr")
		done := startRead(t, ctx, k2, "-s", "--verify", "8", "--header-out", hdrOut)
		mustRun(t, "ring", "write", "-k", k2, "-f", filepath.Join(dir, f.name))
		r := <-done
		want := fmt.Sprintf("read: bytes=%d blocks=%d observations=1 mismatches=0", len(f.data), (len(f.data)+32767)/32768)
		if r.err != nil || !strings.Contains(r.errs, want) {
			t.Fatalf("%s: %v, want %q\n%s", f.name, r.err, want, r.errs)
		}
		b, err := os.ReadFile(hdrOut)
		if err != nil {
			t.Fatal(err)
		}
		h, err := dada.ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		for key, v := range map[string]string{"OBS_OFFSET": strconv.Itoa(i * fileSize), "UTC_START": testUTC, "SOURCE": "J0437-4715",
			"RINGCAP_SEED": "8", "FILE_NUMBER": "0", "FILE_SIZE": strconv.Itoa(len(f.data)), "HDR_SIZE": "8192"} {
			if got, _ := h.Get(key); got != v {
				t.Errorf("%s: %s %q in the ring, want %q", f.name, key, got, v)
			}
		}
	}
}

// --file-header no writes a PSRDADA file whole, as data; --file-header yes refuses a file
// that does not start with a header, and an unknown value is refused.
func TestRingWriteFileHeaderFlag(t *testing.T) {
	k := createRing(t, "-b", "4096", "-n", "8")
	dir := t.TempDir()
	file := block("HDR_SIZE 4096\nSOURCE x\n", 4096, []byte("data"))
	if err := os.WriteFile(dir+"/f.dada", file, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/raw", []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := startRead(t, ctx, k, "-s", "-o", dir+"/out")
	mustRun(t, "ring", "write", "-k", k, "-f", dir+"/f.dada", "--file-header", "no")
	if r := <-done; r.err != nil {
		t.Fatal(r.err, r.errs)
	}
	if out, err := os.ReadFile(dir + "/out"); err != nil || !bytes.Equal(out, file) {
		t.Errorf("--file-header no: read back %d bytes, want the file's %d (%v)", len(out), len(file), err)
	}
	for args, want := range map[string]string{
		"--file-header yes -f " + dir + "/raw":                "does not start with a PSRDADA header",
		"--file-header maybe -f " + dir + "/raw":              `--file-header "maybe": want auto, yes or no`,
		"--header-file " + dir + "/raw -f " + dir + "/f.dada": "give --header-file or that",
	} {
		_, _, err := ringcap(ctx, append([]string{"ring", "write", "-k", k}, strings.Fields(args)...)...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ring write %s: %v, want %q", args, err, want)
		}
	}
}
