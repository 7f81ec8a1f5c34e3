package main

import (
	"os"
	"os/exec"
	"testing"
)

// TestBuildsOnOtherPlatforms cross-compiles the CLI, and with it the whole
// data plane (pkg/dada, pkg/capture and its packages, the verbs binding's
// pure-Go twin), for platforms without Linux SysV IPC, RDMA or CPU affinity:
// a Linux-only call outside the files that say `//go:build linux` fails here.
// There the ring and RDMA commands fail with "not supported" errors.
func TestBuildsOnOtherPlatforms(t *testing.T) {
	for _, goos := range []string{"darwin", "freebsd"} {
		t.Run(goos, func(t *testing.T) {
			cmd := exec.Command("go", "build", "-o", os.DevNull, ".")
			cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("GOOS=%s CGO_ENABLED=0 go build ./cmd/ringcap: %v\n%s", goos, err, out)
			}
		})
	}
}
