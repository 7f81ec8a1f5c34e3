package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"golang.org/x/sys/unix"

	"github.com/ringcap/ringcap/pkg/dada"
)

func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	rng := rand.New(rand.NewPCG(seed, 2))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

type cliResult struct {
	errs string
	err  error
}

// startRead starts `ring read -k k args...` and returns once it holds its reader slot.
func startRead(t *testing.T, ctx context.Context, k string, args ...string) <-chan cliResult {
	t.Helper()
	h := connectRing(t, k)
	free := 0
	if s, err := h.Snapshot(); err == nil {
		free = s.Data.SemRead
	}
	done := make(chan cliResult, 1)
	go func() {
		_, e, err := ringcap(ctx, append([]string{"ring", "read", "-k", k}, args...)...)
		done <- cliResult{e, err}
	}()
	waitFor(t, func(s dada.Snapshot) bool { return s.Data.SemRead < free && s.Header.SemRead < free }, h)
	return done
}

// runChild runs ringcap in a process of its own (this test binary, see TestMain) with
// stdin and stdout as given, and returns its stderr.
func runChild(t *testing.T, stdin io.Reader, stdout io.Writer, args ...string) (string, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), runCLIEnv+"=1")
	var errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, &errb
	err = cmd.Run()
	return errb.String(), err
}

// writeInputs are the inputs ring write -f reads: each writes in to the ring at k and
// returns the command's stderr.
var writeInputs = []struct {
	name  string
	known bool // the size is known (FILE_SIZE is set)
	write func(t *testing.T, k string, in []byte) (string, error)
}{
	{"regular-file", true, func(t *testing.T, k string, in []byte) (string, error) {
		path := filepath.Join(t.TempDir(), "in")
		if err := os.WriteFile(path, in, 0o644); err != nil {
			t.Fatal(err)
		}
		_, errs, err := ringcap(context.Background(), "ring", "write", "-k", k, "-f", path)
		return errs, err
	}},
	{"fifo", false, func(t *testing.T, k string, in []byte) (string, error) {
		path := filepath.Join(t.TempDir(), "fifo")
		if err := unix.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
		fed := make(chan error, 1)
		go func() { fed <- os.WriteFile(path, in, 0o600) }()
		_, errs, err := ringcap(context.Background(), "ring", "write", "-k", k, "-f", path)
		if ferr := <-fed; ferr != nil {
			t.Errorf("feed the FIFO: %v", ferr)
		}
		return errs, err
	}},
	{"pipe-dev-stdin", false, func(t *testing.T, k string, in []byte) (string, error) {
		// As in the issue: head -c N /dev/urandom | ringcap ring write -f /dev/stdin
		return runChild(t, bytes.NewReader(in), nil, "ring", "write", "-k", k, "-f", "/dev/stdin")
	}},
	{"pipe-dash", false, func(t *testing.T, k string, in []byte) (string, error) {
		return runChild(t, bytes.NewReader(in), nil, "ring", "write", "-k", k, "-f", "-")
	}},
}

// ring write -f writes any readable input to its end, byte for byte, through a ring
// smaller than the input to a reader draining it (ring read -s -o): a regular file, a
// FIFO and a pipe (-f /dev/stdin as in the issue, and -f -). The observation ends at the
// input's end, on the block holding the last byte (no empty block after exactly whole
// blocks); FILE_SIZE is set where the size is known (the regular file) and absent where
// it is not.
func TestRingWriteFileReadsAnyInputToItsEnd(t *testing.T) {
	const bs = 4096
	for _, input := range writeInputs {
		for _, n := range []int{1, 20 * bs, 20*bs + 1} {
			t.Run(fmt.Sprintf("%s/%d", input.name, n), func(t *testing.T) {
				k := createRing(t, "-b", fmt.Sprint(bs), "-n", "4")
				dir := t.TempDir()
				read := startRead(t, context.Background(), k, "-s", "-o", dir+"/out", "--header-out", dir+"/hdr")
				in := randomBytes(n, uint64(n))
				werrs, err := input.write(t, k, in)
				if err != nil {
					t.Fatalf("write: %v\n%s", err, werrs)
				}
				blocks := (n + bs - 1) / bs
				if want := fmt.Sprintf("write: bytes=%d blocks=%d observations=1 ", n, blocks); !strings.Contains(werrs, want) {
					t.Errorf("writer: %s\nwant %q", werrs, want)
				}
				r := <-read
				if want := fmt.Sprintf("read: bytes=%d blocks=%d observations=1 ", n, blocks); r.err != nil || !strings.Contains(r.errs, want) {
					t.Errorf("reader: %v\n%s\nwant %q", r.err, r.errs, want)
				}
				if out, err := os.ReadFile(dir + "/out"); err != nil || !bytes.Equal(out, in) {
					t.Fatalf("the reader got %d bytes (%v), not the %d written", len(out), err, n)
				}
				checkFileSize(t, dir+"/hdr", input.known, n)
			})
		}
	}
}

// checkFileSize checks the header at path: FILE_SIZE n when the size is known, else none.
func checkFileSize(t *testing.T, path string, known bool, n int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	hdr, err := dada.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := hdr.Get("FILE_SIZE")
	switch {
	case known && v != fmt.Sprint(n):
		t.Errorf("FILE_SIZE = %q, want %d:\n%s", v, n, b)
	case !known && ok:
		t.Errorf("FILE_SIZE %s for an input whose size is not known:\n%s", v, b)
	}
}

// An empty input (a regular file, a FIFO, a pipe) fails, saying so, and writes nothing
// into the ring: no header, no empty observation.
func TestRingWriteEmptyInputFails(t *testing.T) {
	for _, input := range writeInputs {
		t.Run(input.name, func(t *testing.T) {
			k := createRing(t, "-b", "4096", "-n", "4")
			errs, err := input.write(t, k, nil)
			if err == nil || !strings.Contains(err.Error()+errs, "is empty: no observation to write") {
				t.Fatalf("empty input: %v\n%s", err, errs)
			}
			s := snapshot(t, k)
			if s.Header.WBufCurr != 0 || s.Data.WBufCurr != 0 {
				t.Fatalf("an empty input wrote header blocks %d, data blocks %d", s.Header.WBufCurr, s.Data.WBufCurr)
			}
		})
	}
}

func snapshot(t *testing.T, k string) dada.Snapshot {
	t.Helper()
	h := connectRing(t, k)
	s, err := h.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A regular file truncated while ring write reads it (here: while the writer waits for
// the reader to free a block) fails the command with where it ended; the reader gets
// the bytes that were there and an observation that ends.
func TestRingWriteFileTruncatedWhileRead(t *testing.T) {
	const bs = 4096
	k := createRing(t, "-b", fmt.Sprint(bs), "-n", "4")
	h := connectRing(t, k)
	dir := t.TempDir()
	in := randomBytes(10*bs, 3)
	if err := os.WriteFile(dir+"/in", in, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan cliResult, 1)
	go func() {
		_, e, err := ringcap(context.Background(), "ring", "write", "-k", k, "-f", dir+"/in")
		done <- cliResult{e, err}
	}()
	// No reader yet: the writer fills the 4 blocks and waits for one to be cleared.
	waitFor(t, func(s dada.Snapshot) bool { return s.Data.WBufCurr == 4 && s.Data.WBufNext == 4 }, h)
	const left = 6*bs + 100
	if err := os.Truncate(dir+"/in", left); err != nil {
		t.Fatal(err)
	}
	_, rerrs := mustRun(t, "ring", "read", "-k", k, "-s", "-o", dir+"/out")
	w := <-done
	want := fmt.Sprintf("read %s: it ended at byte %d, short of the %d bytes it had when ring write started", dir+"/in", left, len(in))
	if w.err == nil || !strings.Contains(w.err.Error(), want) {
		t.Fatalf("write of a truncated file: %v\n%s\nwant %q", w.err, w.errs, want)
	}
	if out, err := os.ReadFile(dir + "/out"); err != nil || !bytes.Equal(out, in[:6*bs]) {
		t.Fatalf("the reader got %d bytes (%v), want the %d full blocks before the end\n%s", len(out), err, 6*bs, rerrs)
	}
	if s := snapshot(t, k); s.Data.SemWrite != 1 || s.Header.SemWrite != 1 {
		t.Fatalf("write locks after the failed writer: data %d header %d, want 1 1", s.Data.SemWrite, s.Header.SemWrite)
	}
}

// A stream whose read fails mid-observation fails the write, saying at which byte and
// why; the reader gets what came before and an observation that ends.
func TestRingWriteStreamReadFails(t *testing.T) {
	const bs = 4096
	k := createRing(t, "-b", fmt.Sprint(bs), "-n", "8")
	h := connectRing(t, k)
	w, err := h.LockWrite(context.Background(), dada.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteHeader([]byte("HDR_SIZE 4096\nOBS_OFFSET 0\n")); err != nil {
		t.Fatal(err)
	}
	in := randomBytes(2*bs+10, 4)
	src := io.MultiReader(bytes.NewReader(in[1:]), iotest.ErrReader(errors.New("disk on fire")))
	n, _, err := writeStream(context.Background(), w, src, "the stream", in[0])
	if cerr := w.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	if err == nil || err.Error() != fmt.Sprintf("read the stream at byte %d: disk on fire", len(in)) {
		t.Fatalf("writeStream = %d bytes, %v", n, err)
	}
	dir := t.TempDir()
	mustRun(t, "ring", "read", "-k", k, "-s", "-o", dir+"/out")
	if out, err := os.ReadFile(dir + "/out"); err != nil || !bytes.Equal(out, in[:2*bs]) {
		t.Fatalf("the reader got %d bytes (%v), want the %d full blocks before the failure", len(out), err, 2*bs)
	}
}

// An interrupted ring write that waits on a FIFO whose writer is silent returns (it
// closes the input) and releases its locks.
func TestRingWriteInterruptedWaitingForItsInput(t *testing.T) {
	const bs = 4096
	k := createRing(t, "-b", fmt.Sprint(bs), "-n", "4")
	h := connectRing(t, k)
	path := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, _, err := ringcap(ctx, "ring", "write", "-k", k, "-f", path)
		done <- err
	}()
	fifo, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fifo.Close() }()
	if _, err := fifo.Write(make([]byte, bs+1)); err != nil { // one block, and one byte of the next
		t.Fatal(err)
	}
	waitFor(t, func(s dada.Snapshot) bool { return s.Data.WBufCurr == 1 }, h)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "read "+path+" at byte ") {
		t.Fatalf("interrupted write = %v, want context.Canceled reading %s", err, path)
	}
	if s := snapshot(t, k); s.Data.SemWrite != 1 || s.Header.SemWrite != 1 {
		t.Fatalf("write locks after the interrupted writer: data %d header %d, want 1 1", s.Data.SemWrite, s.Header.SemWrite)
	}
}

// A stream can be read only once: --observations 2 with one fails before the ring is
// touched.
func TestRingWriteStreamOnce(t *testing.T) {
	k := createRing(t, "-b", "4096", "-n", "4")
	errs, err := runChild(t, strings.NewReader("data"), nil, "ring", "write", "-k", k, "-f", "-", "--observations", "2")
	if err == nil || !strings.Contains(errs, "--observations 2: standard input is not a regular file, so it can be read only once") {
		t.Fatalf("two observations of a pipe: %v\n%s", err, errs)
	}
	if s := snapshot(t, k); s.Header.WBufCurr != 0 {
		t.Fatalf("%d header blocks written", s.Header.WBufCurr)
	}
}

// --observations N with a regular file writes the file N times (each from its start).
func TestRingWriteFileObservations(t *testing.T) {
	const bs = 4096
	k := createRing(t, "-b", fmt.Sprint(bs), "-n", "8")
	dir := t.TempDir()
	in := randomBytes(2*bs+5, 5)
	if err := os.WriteFile(dir+"/in", in, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	read := startRead(t, ctx, k, "-o", dir+"/out")
	_, werrs := mustRun(t, "ring", "write", "-k", k, "-f", dir+"/in", "--observations", "3")
	if !strings.Contains(werrs, fmt.Sprintf("write: bytes=%d blocks=9 observations=3 ", 3*len(in))) {
		t.Errorf("writer: %s", werrs)
	}
	h := connectRing(t, k)
	// The reader has read the third observation when its slot is at the fourth.
	waitFor(t, func(s dada.Snapshot) bool { return s.Data.Readers[0].RXfer == 3 }, h)
	cancel()
	r := <-read
	if want := fmt.Sprintf("read: bytes=%d blocks=9 observations=3 ", 3*len(in)); r.err != nil || !strings.Contains(r.errs, want) {
		t.Errorf("reader: %v\n%s\nwant %q", r.err, r.errs, want)
	}
	if out, err := os.ReadFile(dir + "/out"); err != nil || !bytes.Equal(out, bytes.Repeat(in, 3)) {
		t.Fatalf("the reader got %d bytes (%v), want the file 3 times", len(out), err)
	}
}

// connectRing attaches to ring k for the rest of the test.
func connectRing(t *testing.T, k string) *dada.HDU {
	t.Helper()
	h, err := dada.Connect(mustKey(k), dada.ConnectOptions{})
	if err != nil {
		t.Fatalf("connect to ring %s: %v", k, err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}
