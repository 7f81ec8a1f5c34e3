package dra

import (
	"strings"
	"testing"

	"github.com/ringcap/ringcap/internal/plugin"
	"github.com/ringcap/ringcap/pkg/capture/endpoint"
	"github.com/ringcap/ringcap/pkg/rdma"
)

// The environment a claim's CDI spec gives the container is what the receiver reads:
// for every device the driver publishes (the mlx5-like tree with RoCE v1/v2, VLAN and
// InfiniBand ports; the captured rxe tree), endpoint.WithEnv takes device, port and
// GID index from it, and endpoint.Choose then settles on exactly that port and the GID
// the slice's gidIndex attribute advertises.
func TestClaimEnvIsWhatTheReceiverReads(t *testing.T) {
	for _, tree := range []string{pciTree, rxeTree} {
		roots := treeRoots(tree)
		devs, _, err := rdma.Discover(roots)
		if err != nil {
			t.Fatal(err)
		}
		pds, _ := mustScan(t, plugin.DefaultConfig(), roots)
		for _, pd := range pds {
			t.Run(pd.Name, func(t *testing.T) {
				c := preparedClaim{UID: "uid-1", Namespace: "ns", Name: "c", Devices: []allocated{{Request: "rdma", Device: pd.Name}}}
				spec := claimSpec(c, map[string]PortDevice{pd.Name: pd})
				env := map[string]string{}
				for _, kv := range spec.Devices[0].ContainerEdits.Env {
					k, v, _ := strings.Cut(kv, "=")
					env[k] = v
				}
				for _, name := range []string{endpoint.EnvDevice, endpoint.EnvPort} {
					if env[name] == "" {
						t.Errorf("CDI env %v has no %s, which the receiver reads", env, name)
					}
				}
				req, err := endpoint.Request{GIDIndex: -1}.WithEnv(func(k string) string { return env[k] })
				if err != nil {
					t.Fatalf("WithEnv(%v): %v", env, err)
				}
				if req.Device != pd.Dev.Name || req.Port != pd.Port.Num {
					t.Errorf("receiver reads device %q port %d, want %s port %d", req.Device, req.Port, pd.Dev.Name, pd.Port.Num)
				}
				wantGID := -1
				if pd.GID != nil {
					wantGID = pd.GID.Index
				}
				if req.GIDIndex != wantGID {
					t.Errorf("receiver reads GID index %d, want the slice's gidIndex %d", req.GIDIndex, wantGID)
				}
				if pd.GID == nil {
					return // no GID to settle on (InfiniBand without one)
				}
				_, ep, err := endpoint.Choose(devs, req)
				if err != nil {
					t.Fatalf("Choose(%+v): %v", req, err)
				}
				if ep.Device != pd.Dev.Name || ep.Port != pd.Port.Num || ep.GIDIndex != pd.GID.Index {
					t.Errorf("receiver chose %s port %d GID %d, want %s port %d GID %d", ep.Device, ep.Port, ep.GIDIndex, pd.Dev.Name, pd.Port.Num, pd.GID.Index)
				}
			})
		}
	}
}
