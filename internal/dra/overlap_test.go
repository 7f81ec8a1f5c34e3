package dra

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/ringcap/ringcap/internal/plugin"
	"github.com/ringcap/ringcap/internal/testkit"
	"github.com/ringcap/ringcap/pkg/rdma"
	"github.com/ringcap/ringcap/pkg/rdma/rdmatest"
)

func parseConfig(t *testing.T, y string) *plugin.Config {
	t.Helper()
	c, err := plugin.ParseConfig([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRunRefusesOverlap: a device the device plugin's config selects too refuses the
// start, naming the device and both pools, before anything is registered.
func TestRunRefusesOverlap(t *testing.T) {
	testkit.HostOnly(t)
	dir := t.TempDir()
	d, err := New(Options{Roots: treeRoots(rxeTree), NodeName: node, CDIDir: filepath.Join(dir, "cdi"), Client: fake.NewClientset(),
		PluginDir: filepath.Join(dir, "p"), RegistryDir: filepath.Join(dir, "r"),
		OtherConfig: parseConfig(t, "version: v1\npools: [{name: hw, selector: {drivers: [mlx5_core]}}, {name: soft, selector: {devices: [rxe1]}}]")})
	if err != nil {
		t.Fatal(err)
	}
	// A failure deadline: a driver that does not refuse runs until cancelled.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = d.Run(ctx)
	if !errors.Is(err, plugin.ErrOverlap) || !strings.Contains(err.Error(), `rxe1 (the DRA driver's pool "rdma" and the device plugin's pool "soft")`) ||
		strings.Contains(err.Error(), "rxe0") {
		t.Fatalf("Run = %v, want ErrOverlap naming rxe1 (only) and both pools", err)
	}
	for _, sub := range []string{"p", "r"} {
		if ents, _ := os.ReadDir(filepath.Join(dir, sub)); len(ents) != 0 {
			t.Errorf("%s: %v left behind", sub, ents)
		}
	}
	if _, err := New(Options{Roots: treeRoots(rxeTree), NodeName: node, CDIDir: dir, OtherConfig: &plugin.Config{Version: "v0"}}); err == nil ||
		!strings.Contains(err.Error(), "other config") {
		t.Errorf("New with an invalid other config = %v", err)
	}
}

// TestRescanLeavesOutLateOverlap: a device that appears after the start and is selected by
// both configs is not published, each of its ports is left out with the reason, and a claim
// for it is refused.
func TestRescanLeavesOutLateOverlap(t *testing.T) {
	testkit.HostOnly(t)
	roots := rdma.Roots{Sys: rdmatest.CopyDir(t, rxeTree+"/sys"), Dev: rdmatest.CopyDir(t, rxeTree+"/dev")}
	link := filepath.Join(roots.Sys, "class", "infiniband", "rxe1")
	target, err := os.Readlink(link)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	d, err := New(Options{Roots: roots, NodeName: node, CDIDir: t.TempDir(),
		OtherConfig: parseConfig(t, "version: v1\npools: [{name: soft, selector: {devices: [rxe1]}}]")})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.refuseOverlaps(); err != nil {
		t.Fatalf("no overlap before rxe1 appears: %v", err)
	}
	if _, err := d.Rescan(); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Rescan(); err != nil {
		t.Fatal(err)
	}
	if got := d.deviceNames(); !reflect.DeepEqual(got, []string{"rxe0-p1"}) {
		t.Errorf("published %v after rxe1 appeared, want only rxe0-p1", got)
	}
	want := LeftOut{Device: "rxe1", Port: 1, Reason: `also selected by the device plugin's pool "soft" (--other-config): left out by both, so it is never handed out twice`}
	if !d.left[want.String()] {
		t.Errorf("left out %v, want %q", d.left, want.String())
	}
	if r := prepare(t, d, claim("u", "c", "r:rxe1-p1"))["u"]; r.Err == nil || !strings.Contains(r.Err.Error(), "not allocatable") {
		t.Errorf("claim for the overlapping device: %v", r.Err)
	}
}
