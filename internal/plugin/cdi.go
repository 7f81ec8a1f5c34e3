package plugin

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// CDI (Container Device Interface) support: with a CDI directory, the plugin writes
// one spec per pool (kind ringcap.io/<pool>, one CDI device per RDMA device with its
// uverbs node and rdma_cm, umad/issm when the pool exposes them) and Allocate names
// the CDI devices in ContainerAllocateResponse.CdiDevices as well as the DeviceSpecs.

const cdiVersion = "0.6.0"

type cdiSpec struct {
	CDIVersion string      `json:"cdiVersion"`
	Kind       string      `json:"kind"`
	Devices    []cdiDevice `json:"devices"`
}

type cdiDevice struct {
	Name           string   `json:"name"`
	ContainerEdits cdiEdits `json:"containerEdits"`
}

type cdiEdits struct {
	DeviceNodes []cdiNode `json:"deviceNodes,omitempty"`
	Env         []string  `json:"env,omitempty"`
}

type cdiNode struct {
	Path        string `json:"path"`
	Permissions string `json:"permissions,omitempty"`
}

func cdiKind(pool string) string { return ResourcePrefix + pool }

func cdiName(pool, dev string) string { return cdiKind(pool) + "=" + dev }

// cdiSpecPath is the spec file of a pool ("ringcap.io-rdma.json").
func cdiSpecPath(dir, pool string) string {
	return filepath.Join(dir, "ringcap.io-"+pool+".json")
}

func buildCDISpec(pool Pool, ps *poolState) cdiSpec {
	spec := cdiSpec{CDIVersion: cdiVersion, Kind: cdiKind(pool.Name), Devices: []cdiDevice{}}
	names := make([]string, 0, len(ps.devs))
	for n := range ps.devs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		d := ps.devs[n]
		if d.dev.UVerbs == "" {
			continue
		}
		paths := []string{d.dev.UVerbs}
		if pool.CharDevices.UMad {
			paths = append(paths, d.dev.UMad...)
			paths = append(paths, d.dev.ISSM...)
		}
		if d.dev.RDMACM != "" {
			paths = append(paths, d.dev.RDMACM)
		}
		var e cdiEdits
		for _, p := range paths {
			e.DeviceNodes = append(e.DeviceNodes, cdiNode{Path: p, Permissions: "rw"})
		}
		env := d.env()
		keys := make([]string, 0, len(env))
		for k := range env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			e.Env = append(e.Env, k+"="+env[k])
		}
		spec.Devices = append(spec.Devices, cdiDevice{Name: n, ContainerEdits: e})
	}
	return spec
}

// writeCDISpec writes the pool's spec atomically, and only when it changed.
func writeCDISpec(dir string, pool Pool, ps *poolState) error {
	b, err := json.MarshalIndent(buildCDISpec(pool, ps), "", "  ")
	if err != nil {
		return fmt.Errorf("encode CDI spec: %w", err)
	}
	path := cdiSpecPath(dir, pool.Name)
	if old, err := os.ReadFile(path); err == nil && string(old) == string(b) {
		return nil
	}
	return InstallCDISpec(dir, path, ".ringcap-cdi-*", b)
}

// InstallCDISpec writes b to path in dir atomically (a temporary file named by
// pattern, mode 0644, renamed into place), so the runtime never reads half a spec.
func InstallCDISpec(dir, path, pattern string, b []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create CDI directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return fmt.Errorf("write CDI spec: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // no-op after the rename
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write CDI spec: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write CDI spec: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write CDI spec: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("install CDI spec %s: %w", path, err)
	}
	return nil
}
