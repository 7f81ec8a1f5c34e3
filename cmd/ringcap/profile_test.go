package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --cpuprofile writes a Go CPU profile (gzip-compressed protobuf, as pprof reads it) of the
// command it is given to, and a profile that cannot be created fails the command.
func TestCPUProfileFlag(t *testing.T) {
	k := createRing(t, "-b", "1048576", "-n", "4")
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	var prof cpuProfile
	root := newRootCmd(&prof)
	root.SetArgs([]string{"--cpuprofile", path, "ring", "monitor", "-k", k, "-c", "3", "--interval", "10ms"})
	root.SetOut(io.Discard)
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := prof.stop(); err != nil {
		t.Fatal(err)
	}
	if err := prof.stop(); err != nil { // idempotent
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the profile is not gzip-compressed as pprof writes it: %v", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil || len(raw) == 0 {
		t.Fatalf("the profile holds nothing: %d bytes, %v", len(raw), err)
	}

	var bad cpuProfile
	root = newRootCmd(&bad)
	root.SetArgs([]string{"--cpuprofile", filepath.Join(t.TempDir(), "no", "such", "dir"), "ring", "info", "-k", k})
	root.SetOut(io.Discard)
	if err := root.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), "create the CPU profile") {
		t.Fatalf("--cpuprofile into a missing directory: %v", err)
	}
}
