package dra

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ringcap/ringcap/internal/plugin"
	"k8s.io/apimachinery/pkg/types"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// One CDI spec per prepared claim: kind CDIKind, one CDI device per allocated device
// named "<claim UID>-<device>" (never reused, as the kubeletplugin helper advises),
// in the file ClaimSpecPath. The spec's annotations record the claim, its devices and
// their RDMA devices, so a restarted driver finds what it prepared (and which RDMA
// devices that holds) without a separate checkpoint.

// CDIKind is the CDI vendor/class of the claim devices.
const CDIKind = "ringcap.io/claim"

// cdiVersion 0.6.0 is the first with spec annotations.
const cdiVersion = "0.6.0"

// Spec annotations.
const (
	annClaim   = "ringcap.io/claim"   // "<namespace>/<name>"
	annDevices = "ringcap.io/devices" // "<request>:<device>,..." in allocation order
	annIBDevs  = "ringcap.io/ibdevs"  // "<ibdev>,..." of those devices, in the same order
	annAdmin   = "ringcap.io/admin"   // "<request>:<device>,..." allocated with admin access (absent: none)
)

const specPrefix = "ringcap.io-claim_"

// ClaimSpecPath is the CDI spec file of a claim.
func ClaimSpecPath(dir string, uid types.UID) string {
	return filepath.Join(dir, specPrefix+string(uid)+".json")
}

// cdiDeviceName is the CDI device name of a claim's device.
func cdiDeviceName(uid types.UID, dev string) string { return string(uid) + "-" + dev }

// CDIDeviceID is the fully qualified CDI device ID the runtime is given.
func CDIDeviceID(uid types.UID, dev string) string { return CDIKind + "=" + cdiDeviceName(uid, dev) }

// claimSpec builds a claim's spec: every device gets its uverbs node and rdma_cm; the
// first device of each request also gets the RINGCAP_* environment naming it, with
// RINGCAP_RDMA_DEVICES listing every RDMA device of that request (as the device
// plugin does for a container with several devices), and RINGCAP_ADMIN_ACCESS when
// the request has admin access.
func claimSpec(c preparedClaim, devs map[string]PortDevice) cdispec.Spec {
	spec := cdispec.Spec{Version: cdiVersion, Kind: CDIKind, Devices: []cdispec.Device{},
		Annotations: map[string]string{annClaim: c.Namespace + "/" + c.Name, annDevices: c.annotation(), annIBDevs: c.ibdevs()}}
	if adm := c.adminAnnotation(); adm != "" {
		spec.Annotations[annAdmin] = adm
	}
	firstOf := map[string]bool{}
	ibdevs := map[string][]string{}
	for _, a := range c.Devices {
		ibdevs[a.Request] = append(ibdevs[a.Request], devs[a.Device].Dev.Name)
	}
	for _, a := range c.Devices {
		pd := devs[a.Device]
		var e cdispec.ContainerEdits
		for _, p := range []string{pd.Dev.UVerbs, pd.Dev.RDMACM} {
			if p != "" {
				e.DeviceNodes = append(e.DeviceNodes, &cdispec.DeviceNode{Path: p, Permissions: "rw"})
			}
		}
		if !firstOf[a.Request] {
			firstOf[a.Request] = true
			env := map[string]string{}
			for k, v := range pd.Env {
				env[k] = v
			}
			env["RINGCAP_RDMA_DEVICES"] = strings.Join(ibdevs[a.Request], ",")
			if a.Admin {
				env[EnvAdminAccess] = "true"
			}
			for k, v := range env {
				e.Env = append(e.Env, k+"="+v)
			}
			sort.Strings(e.Env)
		}
		spec.Devices = append(spec.Devices, cdispec.Device{Name: cdiDeviceName(c.UID, a.Device), ContainerEdits: e})
	}
	return spec
}

// writeSpec writes a claim's spec atomically (temporary file, rename).
func writeSpec(dir string, uid types.UID, spec cdispec.Spec) error {
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return fmt.Errorf("encode CDI spec: %w", err)
	}
	return plugin.InstallCDISpec(dir, ClaimSpecPath(dir, uid), ".ringcap-claim-*", b)
}

// removeSpec removes a claim's spec; a missing one is not an error.
func removeSpec(dir string, uid types.UID) error {
	if err := os.Remove(ClaimSpecPath(dir, uid)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove CDI spec of claim %s: %w", uid, err)
	}
	return nil
}

// badSpec is a file named as a claim spec that could not be read as one.
type badSpec struct {
	Path string
	Err  error
}

// loadSpecs reads the claims prepared earlier (by this process, an earlier run or the
// other instance of a rolling update) from their specs in dir. A file that cannot be
// read or is not a ringcap claim spec is returned in bad and left in place: it may be
// another program's, and which port it holds cannot be known.
func loadSpecs(dir string) (map[types.UID]preparedClaim, []badSpec, error) {
	paths, err := filepath.Glob(filepath.Join(dir, specPrefix+"*.json"))
	if err != nil {
		return nil, nil, fmt.Errorf("list CDI specs: %w", err)
	}
	out := map[types.UID]preparedClaim{}
	var bad []badSpec
	for _, p := range paths {
		c, err := readSpec(p)
		if err != nil {
			bad = append(bad, badSpec{Path: p, Err: err})
			continue
		}
		out[c.UID] = c
	}
	return out, bad, nil
}

func readSpec(path string) (preparedClaim, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return preparedClaim{}, fmt.Errorf("read CDI spec: %w", err)
	}
	var s cdispec.Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return preparedClaim{}, fmt.Errorf("read CDI spec %s: %w", path, err)
	}
	uid := types.UID(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), specPrefix), ".json"))
	ns, name, ok := strings.Cut(s.Annotations[annClaim], "/")
	if !ok || s.Kind != CDIKind {
		return preparedClaim{}, fmt.Errorf("read CDI spec %s: not a ringcap claim spec (kind %q, claim %q)", path, s.Kind, s.Annotations[annClaim])
	}
	c := preparedClaim{UID: uid, Namespace: ns, Name: name}
	for _, rd := range strings.Split(s.Annotations[annDevices], ",") {
		req, dev, ok := strings.Cut(rd, ":")
		if !ok {
			return preparedClaim{}, fmt.Errorf("read CDI spec %s: bad device entry %q", path, rd)
		}
		c.Devices = append(c.Devices, allocated{Request: req, Device: dev, UVerbs: specUVerbs(s, cdiDeviceName(uid, dev))})
	}
	// Specs from before the ibdevs annotation name the RDMA devices by uverbs only.
	if ib := strings.Split(s.Annotations[annIBDevs], ","); len(ib) == len(c.Devices) {
		for i := range c.Devices {
			c.Devices[i].IBDev = ib[i]
		}
	}
	markAdmin(&c, s.Annotations[annAdmin])
	return c, nil
}

// specUVerbs is the uverbs device node a spec gives its CDI device name, or "".
func specUVerbs(s cdispec.Spec, name string) string {
	for _, d := range s.Devices {
		if d.Name != name {
			continue
		}
		for _, n := range d.ContainerEdits.DeviceNodes {
			if strings.HasPrefix(filepath.Base(n.Path), "uverbs") {
				return n.Path
			}
		}
	}
	return ""
}
