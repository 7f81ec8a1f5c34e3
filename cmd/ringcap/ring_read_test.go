package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A `ring read -o FIFO` whose consumer leaves in the middle of an observation ends with
// the write's error (it opened the output write-only, so the pipe has no other reader),
// and the next `ring read` on the slot resumes the observation: it says where, and the
// rest verifies against the pattern from that byte (the header's OBS_OFFSET). Before, the
// first reader blocked in its write for ever, and a second one would have waited for the
// next header while the writer waited for the slot.
func TestRingReadResumesWhereTheLastReaderLeft(t *testing.T) {
	const total = 300000
	k := createRing(t, "-b", "65536", "-n", "4")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	werr := make(chan error, 1)
	go func() {
		_, errs, err := ringcap(ctx, "ring", "write", "-k", k, "--seed", "11", "--bytes", strconv.Itoa(total))
		if err != nil {
			err = fmt.Errorf("%w: %s", err, errs)
		}
		werr <- err
	}()
	fifo := t.TempDir() + "/fifo"
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	consumed := make(chan error, 1)
	go func() { // a consumer that takes 100000 bytes and leaves
		f, err := os.Open(fifo)
		if err == nil {
			_, err = io.CopyN(io.Discard, f, 100000)
			err = errors.Join(err, f.Close())
		}
		consumed <- err
	}()
	_, errs, err := ringcap(ctx, "ring", "read", "-k", k, "-s", "-o", fifo)
	if err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Fatalf("first reader: %v, want a broken pipe\n%s", err, errs)
	}
	if err := <-consumed; err != nil {
		t.Fatal(err)
	}
	_, errs, err = ringcap(ctx, "ring", "read", "-k", k, "-s", "--verify", "11")
	if err != nil {
		t.Fatalf("second reader: %v\n%s", err, errs)
	}
	m := regexp.MustCompile(`resuming the observation in progress at byte (\d+)`).FindStringSubmatch(errs)
	if m == nil {
		t.Fatalf("second reader did not resume:\n%s", errs)
	}
	at, _ := strconv.Atoi(m[1])
	if at == 0 || at >= total || !strings.Contains(errs, fmt.Sprintf("read: bytes=%d ", total-at)) || !strings.Contains(errs, " mismatches=0") {
		t.Fatalf("second reader resumed at byte %d:\n%s", at, errs)
	}
	if err := <-werr; err != nil {
		t.Fatalf("writer: %v", err)
	}
}
