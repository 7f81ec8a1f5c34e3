package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/pkg/dada"
)

// readLog is a reader that records where each Read was asked to put its bytes.
type readLog struct {
	r     io.Reader
	reads [][]byte
}

func (l *readLog) Read(p []byte) (int, error) {
	l.reads = append(l.reads, p)
	return l.r.Read(p)
}

// ring write -f reads the file straight into the ring's blocks, one read per block, and
// the bytes arrive intact: an empty file, one byte, exactly whole blocks (no empty block
// after them) and whole blocks and a byte.
func TestRingWriteFileOneReadPerBlock(t *testing.T) {
	const bs = 4096
	for _, n := range []int{0, 1, 3 * bs, 3*bs + 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			k := createRing(t, "-b", fmt.Sprint(bs), "-n", "8")
			h, err := dada.Connect(mustKey(k), dada.ConnectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = h.Close() }()
			in := make([]byte, n)
			rng := rand.New(rand.NewPCG(uint64(n), 1))
			for i := range in {
				in[i] = byte(rng.Uint32())
			}
			w, err := h.LockWrite(context.Background(), dada.WriterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.WriteHeader([]byte("HDR_SIZE 4096\nOBS_OFFSET 0\n")); err != nil {
				t.Fatal(err)
			}
			src := &readLog{r: bytes.NewReader(in)}
			got, blocks, err := writeFrom(context.Background(), w, src, "test input", uint64(n))
			if cerr := w.Close(); err == nil {
				err = cerr
			}
			wantBlocks := (n + bs - 1) / bs
			if err != nil || got != uint64(n) || blocks != uint64(wantBlocks) {
				t.Fatalf("writeFrom = %d bytes, %d blocks, %v; want %d bytes in %d blocks", got, blocks, err, n, wantBlocks)
			}
			if len(src.reads) != wantBlocks {
				t.Fatalf("%d reads for %d blocks", len(src.reads), wantBlocks)
			}
			for i, p := range src.reads {
				if want := min(bs, n-i*bs); len(p) != want || !inRing(h.Data, p) {
					t.Fatalf("read %d: %d bytes, in a ring block: %v; want %d bytes straight into a block", i, len(p), inRing(h.Data, p), want)
				}
			}
			out := t.TempDir() + "/out"
			_, errs := mustRun(t, "ring", "read", "-k", k, "-s", "-o", out)
			readBlocks := max(wantBlocks, 1) // an empty observation is one empty block
			if !strings.Contains(errs, fmt.Sprintf("read: bytes=%d blocks=%d observations=1 ", n, readBlocks)) {
				t.Errorf("reader: %s; want %d bytes in %d blocks", errs, n, readBlocks)
			}
			if b, err := os.ReadFile(out); err != nil || !bytes.Equal(b, in) {
				t.Fatalf("read back %d bytes (%v), want the %d written", len(b), err, n)
			}
		})
	}
}

// inRing says whether p starts at the start of one of the ring's blocks.
func inRing(r *dada.Ring, p []byte) bool {
	if len(p) == 0 {
		return false
	}
	for i := range r.NBufs() {
		if &r.Block(i)[0] == &p[0] {
			return true
		}
	}
	return false
}

// A file that shrinks under the writer is an error naming it, not a short observation.
func TestRingWriteFileThatEndsEarly(t *testing.T) {
	k := createRing(t, "-b", "4096", "-n", "4")
	h, err := dada.Connect(mustKey(k), dada.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Close() }()
	w, err := h.LockWrite(context.Background(), dada.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	if err := w.WriteHeader([]byte("HDR_SIZE 4096\n")); err != nil {
		t.Fatal(err)
	}
	_, _, err = writeFrom(context.Background(), w, bytes.NewReader(make([]byte, 5000)), "data.raw", 9000)
	if err == nil || !strings.Contains(err.Error(), "read data.raw: it ended at byte 5000, short of the 9000 bytes it had when ring write started") {
		t.Fatalf("short file: %v", err)
	}
}

// documentedKeys returns the keys of the table under heading in docs/headers.md.
func documentedKeys(t *testing.T, heading string) []string {
	t.Helper()
	b, err := os.ReadFile("../../docs/headers.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/headers.md has no %q", heading)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	var keys []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\|").FindAllStringSubmatch(sec, -1) {
		keys = append(keys, m[1])
	}
	if len(keys) == 0 {
		t.Fatalf("docs/headers.md %q lists no keys", heading)
	}
	return keys
}

// ring write's header has no TRANSFER_SIZE (PSRDADA's dada_dbib would skip its closing
// handshake) and has every key docs/headers.md and the command's help say it sets.
func TestRingWriteHeaderKeys(t *testing.T) {
	keys := documentedKeys(t, "## `ringcap ring write`")
	help, _ := mustRun(t, "ring", "write", "--help")
	for _, key := range append(keys, "TRANSFER_SIZE") {
		if !strings.Contains(help, key) {
			t.Errorf("ring write --help does not mention %s", key)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/in", make([]byte, 10000), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want map[string]string // values where they are known
		not  []string
	}{
		{"pattern", []string{"--seed", "3", "--bytes", "5000"}, map[string]string{"FILE_SIZE": "5000", "RINGCAP_SEED": "3"}, nil},
		{"file", []string{"-f", dir + "/in"}, map[string]string{"FILE_SIZE": "10000"}, []string{"RINGCAP_SEED"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := createRing(t, "-b", "4096", "-n", "4")
			mustRun(t, append([]string{"ring", "write", "-k", k}, c.args...)...)
			mustRun(t, "ring", "read", "-k", k, "-s", "-o", os.DevNull, "--header-out", dir+"/hdr."+c.name)
			b, err := os.ReadFile(dir + "/hdr." + c.name)
			if err != nil {
				t.Fatal(err)
			}
			hdr, err := dada.ParseHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			if v, ok := hdr.Get("TRANSFER_SIZE"); ok {
				t.Errorf("header has TRANSFER_SIZE %s:\n%s", v, b)
			}
			for _, key := range keys {
				v, ok := hdr.Get(key)
				if slices.Contains(c.not, key) {
					if ok {
						t.Errorf("header has %s %s", key, v)
					}
					continue
				}
				if !ok {
					t.Errorf("header lacks %s, which docs/headers.md says ring write sets:\n%s", key, b)
				}
				if want, known := c.want[key]; known && v != want {
					t.Errorf("%s = %q, want %q", key, v, want)
				}
			}
		})
	}
}
