package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/pattern"
)

func TestDbdiskFileSize(t *testing.T) {
	for _, c := range []struct {
		name, hdr string
		off, want uint64
	}{
		{"file-size", "FILE_SIZE 100000\n", 0, 100000},
		{"bytes-per-second", "BYTES_PER_SECOND 1000\n", 0, 10000},
		{"no-size-keys", "SOURCE x\n", 0, 640000000},
		{"file-size-zero", "FILE_SIZE 0\nBYTES_PER_SECOND 1000\n", 0, 10000},
		{"resolution-down", "FILE_SIZE 1000\nRESOLUTION 300\n", 0, 900},      // end 1000: gap 100
		{"resolution-up", "FILE_SIZE 1000\nRESOLUTION 600\n", 0, 1200},       // end 1000: gap 400
		{"resolution-offset", "FILE_SIZE 1000\nRESOLUTION 300\n", 200, 1000}, // end 1200: gap 0
		{"resolution-tiny", "FILE_SIZE 10\nRESOLUTION 300\n", 0, 300},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, err := dada.ParseHeader([]byte(c.hdr))
			if err != nil {
				t.Fatal(err)
			}
			got, err := dbdiskFileSize(h, c.off)
			if err != nil || got != c.want {
				t.Errorf("dbdiskFileSize(%q, %d) = %d, %v; want %d", c.hdr, c.off, got, err, c.want)
			}
		})
	}
}

func TestDbdiskFileSizeBadHeader(t *testing.T) {
	for _, hdr := range []string{"FILE_SIZE x\n", "BYTES_PER_SECOND x\n", "BYTES_PER_SECOND 0\n", "FILE_SIZE 5\nRESOLUTION -1\n"} {
		h, err := dada.ParseHeader([]byte(hdr))
		if err != nil {
			t.Fatal(err)
		}
		if n, err := dbdiskFileSize(h, 0); err == nil {
			t.Errorf("%q: size %d, want an error", hdr, n)
		}
	}
}

// dadaFile is a PSRDADA file read back: its name, header and data.
type dadaFile struct {
	name string
	hdr  *dada.Header
	data []byte
}

// readDadaDir reads the files of dir, sorted by name.
func readDadaDir(t *testing.T, dir string) []dadaFile {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []dadaFile
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		end := min(len(b), 4096)
		h, err := dada.ParseHeader(bytes.TrimRight(b[:end], "\x00"))
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		n, err := h.HDRSize()
		if err != nil || n > len(b) {
			t.Fatalf("%s: HDR_SIZE %d (%v), file %d bytes", e.Name(), n, err, len(b))
		}
		out = append(out, dadaFile{e.Name(), h, b[n:]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// checkDadaFiles checks that dir holds exactly dada_dbdisk's files of an observation of
// data starting at UTC utc, split every fileSize bytes.
func checkDadaFiles(t *testing.T, dir, utc string, data []byte, fileSize int) {
	t.Helper()
	files := readDadaDir(t, dir)
	var want []string
	for off := 0; off < len(data); off += fileSize {
		want = append(want, fmt.Sprintf("%s_%016d.000000.dada", utc, off))
	}
	if len(files) != len(want) {
		t.Fatalf("files %v, want %v", names(files), want)
	}
	for i, f := range files {
		off := i * fileSize
		part := data[off:min(off+fileSize, len(data))]
		if f.name != want[i] || !bytes.Equal(f.data, part) {
			t.Errorf("file %d: %s with %d bytes, want %s with %d bytes of the observation from byte %d", i, f.name, len(f.data), want[i], len(part), off)
		}
		for k, v := range map[string]string{"OBS_OFFSET": strconv.Itoa(off), "FILE_SIZE": strconv.Itoa(len(part)), "FILE_NUMBER": "0", "UTC_START": utc, "HDR_SIZE": "4096"} {
			if got, _ := f.hdr.Get(k); got != v {
				t.Errorf("%s: %s %q, want %q", f.name, k, got, v)
			}
		}
	}
}

func names(fs []dadaFile) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.name)
	}
	return out
}

const testUTC = "2026-01-02-03:04:05"

// ring read --dada-dir writes an observation as dada_dbdisk does: split at FILE_SIZE, each
// file its header (OBS_OFFSET, FILE_SIZE, FILE_NUMBER of that file) then its data, named
// UTC_START_OBS_OFFSET.000000.dada; the last, short file's FILE_SIZE is what it holds.
func TestRingReadDadaDirSplitsAtFileSize(t *testing.T) {
	const total, fileSize = 250000, 100000
	k := createRing(t, "-b", "65536", "-n", "4")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := startRead(t, ctx, k, "-s", "--dada-dir", dir, "--verify", "3")
	mustRun(t, "ring", "write", "-k", k, "--seed", "3", "--bytes", strconv.Itoa(total),
		"--header", "FILE_SIZE="+strconv.Itoa(fileSize), "--header", "UTC_START="+testUTC)
	if r := <-done; r.err != nil || !strings.Contains(r.errs, " mismatches=0") {
		t.Fatalf("read: %v\n%s", r.err, r.errs)
	}
	data := make([]byte, total)
	pattern.Fill(data, 3, 0)
	checkDadaFiles(t, dir, testUTC, data, fileSize)
}

// A --dada-dir that is missing, not a directory or not writable fails ring read before it
// takes a reader slot, naming the flag.
func TestRingReadDadaDirRefusesBadDir(t *testing.T) {
	k := createRing(t, "-b", "4096", "-n", "4")
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h := connectRing(t, k)
	for dir, want := range map[string]string{
		filepath.Join(t.TempDir(), "missing"): "no such file or directory",
		file:                                  "not a directory",
		"/proc/self":                          "not writable",
	} {
		_, errs, err := ringcap(context.Background(), "ring", "read", "-k", k, "-s", "--dada-dir", dir)
		if err == nil || !strings.Contains(err.Error(), "--dada-dir") || !strings.Contains(err.Error(), want) {
			t.Errorf("--dada-dir %s: %v, want an error with %q\n%s", dir, err, want, errs)
		}
		if s, err := h.Snapshot(); err != nil || s.Data.SemRead != 1 || s.Data.Readers[0].RState != 0 {
			t.Errorf("--dada-dir %s: the reader slot was taken (%v)", dir, err)
		}
	}
}

// mountEnv makes the test binary, run as the CLI in new user and mount namespaces (see
// runOnTmpfs), mount a tmpfs of the size given at the directory given: "SIZE:DIR".
const mountEnv = "RINGCAP_TEST_TMPFS"

// mountTestTmpfs mounts the tmpfs mountEnv asks for, in the child's own mount namespace.
func mountTestTmpfs() {
	size, dir, ok := strings.Cut(os.Getenv(mountEnv), ":")
	if !ok {
		return
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		fmt.Fprintln(os.Stderr, "make mounts private:", err)
		os.Exit(2)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		fmt.Fprintln(os.Stderr, "mount tmpfs:", err)
		os.Exit(2)
	}
}

// runOnTmpfs runs ringcap args in a process of its own with a tmpfs of size bytes mounted
// at dir, and returns its stderr.
func runOnTmpfs(t *testing.T, size int, dir string, args ...string) (string, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), runCLIEnv+"=1", fmt.Sprintf("%s=%d:%s", mountEnv, size, dir))
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err = cmd.Run()
	return errb.String(), err
}

// A full disk fails ring read --dada-dir with the file and the observation byte where the
// write failed, and releases the reader slot in the middle of the observation: the next
// reader resumes it from a byte no later than that, and the rest verifies (nothing is
// lost silently).
func TestRingReadDadaDirFullDisk(t *testing.T) {
	const total = 200000
	k := createRing(t, "-b", "16384", "-n", "4")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	werr := make(chan error, 1)
	go func() {
		_, errs, err := ringcap(ctx, "ring", "write", "-k", k, "--seed", "4", "--bytes", strconv.Itoa(total), "--header", "UTC_START="+testUTC)
		if err != nil {
			err = fmt.Errorf("%w: %s", err, errs)
		}
		werr <- err
	}()
	dir := t.TempDir()
	errs, err := runOnTmpfs(t, 32768, dir, "ring", "read", "-k", k, "-s", "--dada-dir", dir)
	m := regexp.MustCompile(`write \S+\.part at observation byte (\d+): .*no space left on device`).FindStringSubmatch(errs)
	if err == nil || m == nil {
		t.Fatalf("reader on a full disk: %v, want it to fail saying where\n%s", err, errs)
	}
	failedAt, _ := strconv.Atoi(m[1])
	_, errs, err = ringcap(ctx, "ring", "read", "-k", k, "-s", "--verify", "4")
	r := regexp.MustCompile(`resuming the observation in progress at byte (\d+)`).FindStringSubmatch(errs)
	if err != nil || r == nil {
		t.Fatalf("next reader: %v, want it to resume\n%s", err, errs)
	}
	if at, _ := strconv.Atoi(r[1]); at > failedAt || !strings.Contains(errs, fmt.Sprintf("read: bytes=%d ", total-at)) || !strings.Contains(errs, " mismatches=0") {
		t.Fatalf("next reader resumed at byte %d, the first failed at %d:\n%s", at, failedAt, errs)
	}
	if err := <-werr; err != nil {
		t.Fatalf("writer: %v", err)
	}
}

// A ring read --dada-dir that stops in the middle of an observation leaves its file as
// NAME.part; the next one resumes the observation and continues that file where the data
// resume, so the files are those of an uninterrupted reader.
func TestRingReadDadaDirResumeContinuesTheFile(t *testing.T) {
	const total, fileSize, first = 250000, 100000, 150000
	k := createRing(t, "-b", "65536", "-n", "4")
	dir := t.TempDir()
	data := make([]byte, total)
	pattern.Fill(data, 6, 0)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	werr := make(chan error, 1)
	go func() {
		_, errs, err := ringcap(ctx, "ring", "write", "-k", k, "-f", fifo, "--header", "FILE_SIZE=100000", "--header", "UTC_START="+testUTC)
		if err != nil {
			err = fmt.Errorf("%w: %s", err, errs)
		}
		werr <- err
	}()
	feed, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = feed.Close() }()
	rctx, stop := context.WithCancel(ctx)
	done := startRead(t, rctx, k, "-s", "--dada-dir", dir)
	if _, err := feed.Write(data[:first]); err != nil {
		t.Fatal(err)
	}
	// The writer fills two blocks (131072 bytes) and waits for the rest of the third: the
	// reader completes the first file and writes 31072 bytes of the second.
	part := filepath.Join(dir, fmt.Sprintf("%s_%016d.000000.dada%s", testUTC, fileSize, partSuffix))
	waitForSize(t, part, 4096+131072-fileSize)
	stop()
	if r := <-done; r.err == nil {
		t.Fatalf("first reader: ended without error, want it stopped mid-observation\n%s", r.errs)
	}
	done = startRead(t, ctx, k, "-s", "--dada-dir", dir)
	if _, err := feed.Write(data[first:]); err != nil {
		t.Fatal(err)
	}
	if err := feed.Close(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || !strings.Contains(r.errs, "resuming the observation in progress at byte 131072") {
		t.Fatalf("second reader: %v, want it to resume at byte 131072\n%s", r.err, r.errs)
	}
	if err := <-werr; err != nil {
		t.Fatalf("writer: %v", err)
	}
	checkDadaFiles(t, dir, testUTC, data, fileSize)
}

// waitForSize polls until the file at path has at least n bytes.
func waitForSize(t *testing.T, path string, n int64) {
	t.Helper()
	for i := 0; ; i++ {
		if st, err := os.Stat(path); err == nil && st.Size() >= n {
			return
		}
		if i == 3000 {
			t.Fatalf("%s never reached %d bytes", path, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Two observations with the same UTC_START and OBS_OFFSET get FILE_NUMBER 0 and 1, as in
// dada_dbdisk, so the second does not overwrite the first; a reader that would write a file
// that exists (a later ring read into the same directory) fails instead of overwriting it.
func TestRingReadDadaDirRepeatedObservation(t *testing.T) {
	k := createRing(t, "-b", "4096", "-n", "4")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rctx, stop := context.WithCancel(ctx)
	done := startRead(t, rctx, k, "--dada-dir", dir)
	write := []string{"ring", "write", "-k", k, "--seed", "2", "--bytes", "1000", "--header", "UTC_START=" + testUTC}
	mustRun(t, append(write, "--observations", "2")...)
	first := filepath.Join(dir, testUTC+"_0000000000000000.000000.dada")
	second := filepath.Join(dir, testUTC+"_0000000000000000.000001.dada")
	waitForSize(t, second, 4096+1000)
	stop()
	if r := <-done; r.err != nil || !strings.Contains(r.errs, "observations=2") {
		t.Fatalf("reader: %v\n%s", r.err, r.errs)
	}
	for i, f := range readDadaDir(t, dir) {
		if n, _ := f.hdr.Get("FILE_NUMBER"); n != strconv.Itoa(i) || len(f.data) != 1000 {
			t.Errorf("%s: FILE_NUMBER %s, %d bytes; want %d, 1000 bytes", f.name, n, len(f.data), i)
		}
	}
	before, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	done = startRead(t, ctx, k, "-s", "--dada-dir", dir)
	mustRun(t, write...)
	r := <-done
	if r.err == nil || !strings.Contains(r.err.Error(), first+" exists: ring read does not overwrite files") {
		t.Fatalf("reader into a directory holding the file: %v, want it to refuse to overwrite %s\n%s", r.err, first, r.errs)
	}
	if after, err := os.ReadFile(first); err != nil || !bytes.Equal(after, before) {
		t.Errorf("%s changed (%v)", first, err)
	}
}

// A reader resuming inside a file the earlier reader completed (it was stopped after the
// rename, before it cleared the block) skips the bytes that file holds and starts the next
// file at its boundary; one resuming where no part file is (the earlier reader wrote
// elsewhere) starts a new file at the resumed byte.
func TestDadaDirResumePlacement(t *testing.T) {
	hdr := []byte("HDR_SIZE 4096\nUTC_START " + testUTC + "\nFILE_SIZE 1000\nOBS_OFFSET 1500\n")
	data := make([]byte, 3000)
	pattern.Fill(data, 9, 0)
	for _, c := range []struct {
		name     string
		complete bool // the file [1000, 2000) is there, complete
		want     []string
	}{
		{"inside-a-complete-file", true, []string{testUTC + "_0000000000001000.000000.dada", testUTC + "_0000000000002000.000000.dada"}},
		{"no-part-file", false, []string{testUTC + "_0000000000001500.000000.dada", testUTC + "_0000000000002500.000000.dada"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.complete {
				if err := os.WriteFile(filepath.Join(dir, c.want[0]), block("HDR_SIZE 4096\n", 4096, data[1000:2000]), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			d := newDadaDir(dir, 4096)
			// The observation began at byte 0; an earlier reader consumed 1500 bytes of it.
			if err := d.begin(hdr, 1500); err != nil {
				t.Fatal(err)
			}
			if err := d.write(data[1500:]); err != nil {
				t.Fatal(err)
			}
			if err := d.end(); err != nil {
				t.Fatal(err)
			}
			files := readDadaDir(t, dir)
			if got := names(files); strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Fatalf("files %v, want %v", got, c.want)
			}
			last := files[len(files)-1]
			off, _ := last.hdr.OBSOffset()
			if !bytes.Equal(last.data, data[off:min(off+1000, 3000)]) {
				t.Errorf("%s: its data are not the observation's from byte %d", last.name, off)
			}
		})
	}
}
