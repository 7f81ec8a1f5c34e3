//go:build linux

package vmtest

import (
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ringcap/ringcap/pkg/dada"
)

// RDMAResources returns the kernel's per-device object counts ("rdma resource show"), so a
// leak check sees what libibverbs really left behind, not just a package's counters.
func RDMAResources(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("rdma", "resource", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("rdma resource show: %v\n%s", err, out)
	}
	for _, want := range []string{Device0 + ":", Device1 + ":", " pd ", " cq ", " qp ", " mr "} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("rdma resource show lacks %q:\n%s", want, out)
		}
	}
	return string(out)
}

// LeakCheck fails t when, at its end, the objects live reports (verbs.Live) or the kernel's
// RDMA resources differ from what they were when it was called.
func LeakCheck[T comparable](t *testing.T, live func() T) {
	t.Helper()
	live0, res0 := live(), RDMAResources(t)
	t.Cleanup(func() {
		if now := live(); now != live0 {
			t.Errorf("verbs objects leaked: %+v, before the test %+v", now, live0)
		}
		if res := RDMAResources(t); res != res0 {
			t.Errorf("kernel RDMA resources leaked:\nbefore: %safter:  %s", res0, res)
		}
	})
}

// Cleanup runs close when the test ends and fails the test if it fails.
func Cleanup(t testing.TB, close func() error) {
	t.Cleanup(func() {
		if err := close(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
}

var keySeq atomic.Int32

// NewKey returns a ring key no other test uses. Ring keys use key + n*0x10000 for their
// blocks and key+1 for the header ring: test rings are 0x800000 apart, and processes differ
// in the low bits.
func NewKey() dada.Key {
	return dada.Key(0x40000000 + keySeq.Add(1)*0x800000 + (int32(os.Getpid())&0xff)<<8)
}

// NewRing creates a PSRDADA ring for the test and destroys it at the end.
func NewRing(t testing.TB, nbufs, bufsz uint64) dada.Key {
	t.Helper()
	key := NewKey()
	cfg := dada.DefaultConfig()
	cfg.Key, cfg.NBufs, cfg.BufSize = key, nbufs, bufsz
	h, err := dada.Create(cfg)
	if err != nil {
		t.Fatalf("create ring %s (%d x %d): %v", key, nbufs, bufsz, err)
	}
	t.Cleanup(func() {
		if err := h.Destroy(); err != nil {
			t.Errorf("destroy ring %s: %v", key, err)
		}
	})
	return key
}

// ConnectRing attaches the ring (its blocks back to back when contiguous asks for it, see
// dada.ConnectOptions) until the test ends.
func ConnectRing(t testing.TB, key dada.Key, contiguous bool) *dada.HDU {
	t.Helper()
	h, err := dada.Connect(key, dada.ConnectOptions{Contiguous: contiguous})
	if err != nil {
		t.Fatalf("connect ring %s: %v", key, err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}
