//go:build helm

package charts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/dynamic-resource-allocation/cel"

	"github.com/ringcap/ringcap/internal/dra"
	"github.com/ringcap/ringcap/internal/plugin"
	"github.com/ringcap/ringcap/pkg/rdma"
)

func TestPluginModes(t *testing.T) {
	for _, tc := range []struct {
		mode           string
		plugin, driver bool
	}{
		{"", true, false}, // the default
		{"deviceplugin", true, false},
		{"dra", false, true},
		{"both", true, true},
	} {
		var set []string
		if tc.mode != "" {
			set = append(set, "plugin.mode="+tc.mode)
		}
		values := ""
		if tc.mode == "both" {
			values = splitValues
		}
		objs := render(t, values, set...)
		_, hasPlugin := objs["DaemonSet/rc-ringcap-plugin"]
		_, hasDriver := objs["DaemonSet/rc-ringcap-dra"]
		_, hasClass := objs["DeviceClass/rc-ringcap-rdma"]
		_, hasRole := objs["ClusterRole/rc-ringcap-dra"]
		if hasPlugin != tc.plugin || hasDriver != tc.driver || hasClass != tc.driver || hasRole != tc.driver {
			t.Errorf("mode %q: device plugin %v, DRA driver %v (class %v, role %v); want %v, %v", tc.mode, hasPlugin, hasDriver, hasClass, hasRole, tc.plugin, tc.driver)
		}
	}
}

func TestDRADriver(t *testing.T) {
	objs := render(t, "", "plugin.mode=dra")
	var ds appsv1.DaemonSet
	objs.get(t, "DaemonSet/rc-ringcap-dra", &ds)
	ps := ds.Spec.Template.Spec
	c := ps.Containers[0]
	if c.Image != "ringcap/plugin:"+chartVersion(t) || ps.ServiceAccountName != "rc-ringcap-dra" {
		t.Errorf("image %q, service account %q", c.Image, ps.ServiceAccountName)
	}
	for _, a := range []string{"--mode=dra", "--config=/etc/ringcap/config.yaml", "--sys-root=/host/sys", "--node-name=$(NODE_NAME)",
		"--cdi-dir=/var/run/cdi", "--kubelet-plugins-dir=/var/lib/kubelet/plugins/" + dra.DriverName,
		"--kubelet-registry-dir=/var/lib/kubelet/plugins_registry"} {
		if !slices.Contains(c.Args, a) {
			t.Errorf("driver args %q lack %q", c.Args, a)
		}
	}
	sc := c.SecurityContext
	if sc == nil || (sc.Privileged != nil && *sc.Privileged) || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("driver securityContext is not least-privilege: %+v", sc)
	}
	hostPaths := map[string]string{}
	for _, v := range ps.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	wantHP := map[string]string{"plugin-dir": "/var/lib/kubelet/plugins/" + dra.DriverName, "plugins-registry": "/var/lib/kubelet/plugins_registry",
		"cdi": "/var/run/cdi", "sys": "/sys", "infiniband": "/dev/infiniband"}
	if !mapsEqual(hostPaths, wantHP) {
		t.Errorf("driver hostPath volumes %v, want %v", hostPaths, wantHP)
	}
	writable := map[string]bool{"plugin-dir": true, "plugins-registry": true, "cdi": true}
	for _, m := range c.VolumeMounts {
		if !m.ReadOnly != writable[m.Name] {
			t.Errorf("driver mount %s readOnly=%v: only the plugin, registry and CDI directories may be writable", m.Name, m.ReadOnly)
		}
	}

	var cr rbacv1.ClusterRole
	objs.get(t, "ClusterRole/rc-ringcap-dra", &cr)
	for _, v := range []string{"list", "watch", "create", "update", "delete"} {
		if !grants(cr.Rules, "resource.k8s.io", "resourceslices", v) {
			t.Errorf("driver role cannot %s resourceslices: %+v", v, cr.Rules)
		}
	}
	if !grants(cr.Rules, "resource.k8s.io", "resourceclaims", "get") || !grants(cr.Rules, "resource.k8s.io", "resourceclaims/status", "patch") || !grants(cr.Rules, "", "nodes", "get") {
		t.Errorf("driver role cannot read claims, patch their status or read its node: %+v", cr.Rules)
	}
	for _, r := range cr.Rules {
		if slices.Contains(r.Verbs, "*") || slices.Contains(r.Resources, "*") || slices.Contains(r.APIGroups, "*") {
			t.Errorf("driver role has a wildcard: %+v", r)
		}
	}
	if grants(cr.Rules, "resource.k8s.io", "resourceclaims", "update") || grants(cr.Rules, "", "secrets", "get") || grants(cr.Rules, "", "nodes", "patch") {
		t.Errorf("driver role grants more than it needs: %+v", cr.Rules)
	}
	if !grants(cr.Rules, "", "events", "create") {
		t.Errorf("driver role cannot record Events on its Node: %+v", cr.Rules)
	}
	// Kubernetes >= 1.36: status.devices writes need resourceclaims/driver, named after
	// the driver, with the associated-node verbs only (not arbitrary-node).
	drv := slices.IndexFunc(cr.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "resourceclaims/driver") })
	if drv < 0 || !slices.Equal(cr.Rules[drv].ResourceNames, []string{dra.DriverName}) ||
		!slices.Equal(cr.Rules[drv].Verbs, []string{"associated-node:patch", "associated-node:update"}) {
		t.Errorf("driver role's resourceclaims/driver rule: %+v", cr.Rules)
	}
	if !grants(cr.Rules, "events.k8s.io", "events", "create") {
		t.Errorf("driver role cannot record events: %+v", cr.Rules)
	}
	checkBinding(t, objs, "ClusterRoleBinding/rc-ringcap-dra", "rc-ringcap-dra")
	checkProbes(t, c)
}

// checkProbes: the driver serves /metrics and /healthz on the declared metrics port, and
// its startup and liveness probes call /healthz there.
func checkProbes(t *testing.T, c corev1.Container) {
	t.Helper()
	for _, a := range []string{"--metrics-addr=:9101", "--registration-timeout=3m"} {
		if !slices.Contains(c.Args, a) {
			t.Errorf("driver args %q lack %q", c.Args, a)
		}
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" && p.ContainerPort == 9101 }) {
		t.Errorf("driver ports %+v: no metrics port 9101", c.Ports)
	}
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != "metrics" {
			t.Errorf("driver %s probe %+v, want httpGet /healthz on port metrics", name, p)
		}
	}
}

// TestDRASlicePolicy: the ValidatingAdmissionPolicy and its binding that keep each
// node's driver to its own node's ResourceSlices are on by default, match the driver's
// service account and can be switched off (what the policy does is tested on a real
// API server in internal/dra).
func TestDRASlicePolicy(t *testing.T) {
	objs := render(t, "", "plugin.mode=dra")
	vap, ok := objs["ValidatingAdmissionPolicy/rc-ringcap-dra-slices"]
	if !ok {
		t.Fatal("no ValidatingAdmissionPolicy rc-ringcap-dra-slices by default")
	}
	expr, _, _ := unstructured.NestedSlice(vap.Object, "spec", "matchConditions")
	if len(expr) != 1 || !strings.Contains(expr[0].(map[string]any)["expression"].(string), `"system:serviceaccount:ringcap-system:rc-ringcap-dra"`) {
		t.Errorf("policy matchConditions %v, want the driver's service account", expr)
	}
	b, ok := objs["ValidatingAdmissionPolicyBinding/rc-ringcap-dra-slices"]
	if !ok {
		t.Fatal("no ValidatingAdmissionPolicyBinding rc-ringcap-dra-slices by default")
	}
	if name, _, _ := unstructured.NestedString(b.Object, "spec", "policyName"); name != "rc-ringcap-dra-slices" {
		t.Errorf("binding %v", b.Object)
	}
	off := render(t, "", "plugin.mode=dra", "plugin.dra.slicePolicy=false")
	for _, k := range []string{"ValidatingAdmissionPolicy/rc-ringcap-dra-slices", "ValidatingAdmissionPolicyBinding/rc-ringcap-dra-slices"} {
		if _, ok := off[k]; ok {
			t.Errorf("plugin.dra.slicePolicy=false still renders %s", k)
		}
	}
}

// splitValues is plugin.mode both with pools that select different devices.
const splitValues = `plugin:
  mode: both
  config: {version: v1, pools: [{name: rdma, selector: {drivers: [mlx5_core]}}]}
  dra:
    config: {version: v1, pools: [{name: soft, selector: {drivers: [rdma_rxe]}}]}
`

// TestBothRefusesOverlap: helm refuses plugin.mode both when the two sides would offer
// the same devices (no plugin.dra.config, an empty selector, selectors that agree on
// every list both set), and DRA pools with sharing shared; it takes pools that a
// devices, drivers or vendors list sets apart, and pairs it cannot decide (left to the
// binaries' --other-config).
func TestBothRefusesOverlap(t *testing.T) {
	both := func(plugin, dra string) string {
		v := "plugin:\n  mode: both\n  config: {version: v1, pools: [" + plugin + "]}\n"
		if dra != "" {
			v += "  dra:\n    config: {version: v1, pools: [" + dra + "]}\n"
		}
		return v
	}
	for _, tc := range []struct {
		name, values, want string // want "": accepted
	}{
		{"no dra.config", both("{name: rdma}", ""), "plugin.mode both needs plugin.dra.config"},
		{"both select everything", both("{name: rdma}", "{name: soft}"), `pool "rdma" and plugin.dra.config pool "soft" select the same devices (both selectors are empty`},
		{"device plugin selects everything", both("{name: rdma}", "{name: soft, selector: {drivers: [rdma_rxe]}}"), "the first selector is empty"},
		{"driver selects everything", both("{name: rdma, selector: {devices: [mlx5_0]}}", "{name: soft}"), "the second selector is empty"},
		{"identical selectors", both("{name: a, selector: {drivers: [rdma_rxe], netdevs: [veth1]}}", "{name: b, selector: {netdevs: [veth1], drivers: [rdma_rxe]}}"),
			"their drivers, netdevs lists have entries in common"},
		{"a common driver", both("{name: a, selector: {drivers: [mlx5_core, rdma_rxe]}}", "{name: b, selector: {drivers: [rdma_rxe], linkLayers: [Ethernet]}}"),
			"their drivers lists have entries in common"},
		{"second pool overlaps", both("{name: a, selector: {devices: [rxe0]}}, {name: c, selector: {vendors: [\"0x15b3\"]}}",
			"{name: b, selector: {devices: [rxe1]}}, {name: d, selector: {vendors: [\"0x15b3\"]}}"), `pool "c" and plugin.dra.config pool "d"`},
		{"split by device", both("{name: a, selector: {devices: [rxe0]}}", "{name: b, selector: {devices: [rxe1]}}"), ""},
		{"split by driver with one list more", both("{name: a, selector: {drivers: [mlx5_core], linkLayers: [Ethernet]}}", "{name: b, selector: {drivers: [rdma_rxe]}}"), ""},
		{"split by netdev", both("{name: a, selector: {netdevs: [veth0]}}", "{name: b, selector: {netdevs: [veth1]}}"), ""},
		{"no common list", both("{name: a, selector: {devices: [mlx5_0]}}", "{name: b, selector: {drivers: [rdma_rxe]}}"), ""},
		{"shared DRA pool", both("{name: a, selector: {devices: [rxe0]}}", "{name: b, selector: {devices: [rxe1]}, sharing: {mode: shared, maxPodsPerDevice: 2}}"),
			"plugin.dra.config pools[0] (b): sharing mode shared does not apply to the DRA driver: pods share a port by sharing a ResourceClaim"},
		{"shared pool in mode dra", "plugin:\n  mode: dra\n  config: {version: v1, pools: [{name: a, sharing: {mode: shared, maxPodsPerDevice: 2}}]}\n",
			"plugin.config pools[0] (a): sharing mode shared does not apply"},
		{"shared pool in mode deviceplugin", "plugin:\n  config: {version: v1, pools: [{name: a, sharing: {mode: shared, maxPodsPerDevice: 2}}]}\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(f, []byte(tc.values), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := helm(t, "template", "rc", chartDir, "-f", f)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v\n%s", err, tc.values)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want a refusal containing %q\n%s", err, tc.want, tc.values)
			}
		})
	}
}

// TestBothOtherConfig: in plugin.mode both each DaemonSet gets the other side's pools
// (--other-config, from its own ConfigMap) and the configs are valid and disjoint on the
// testdata trees; in the other modes no --other-config.
func TestBothOtherConfig(t *testing.T) {
	objs := render(t, splitValues)
	configs := map[string]*plugin.Config{}
	for _, side := range []struct{ name, file, other string }{
		{"plugin", "dra-config.yaml", "rdma_rxe"},
		{"dra", "deviceplugin-config.yaml", "mlx5_core"},
	} {
		var ds appsv1.DaemonSet
		objs.get(t, "DaemonSet/rc-ringcap-"+side.name, &ds)
		if args := ds.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--other-config=/etc/ringcap/"+side.file) {
			t.Errorf("%s args %q lack --other-config=/etc/ringcap/%s", side.name, args, side.file)
		}
		var cm corev1.ConfigMap
		objs.get(t, "ConfigMap/rc-ringcap-"+side.name, &cm)
		own, err := plugin.ParseConfig([]byte(cm.Data["config.yaml"]))
		if err != nil {
			t.Fatalf("%s config: %v", side.name, err)
		}
		other, err := plugin.ParseConfig([]byte(cm.Data[side.file]))
		if err != nil {
			t.Fatalf("%s --other-config: %v\n%s", side.name, err, cm.Data[side.file])
		}
		if !slices.Equal(other.Pools[0].Selector.Drivers, []string{side.other}) {
			t.Errorf("%s --other-config pools %+v, want the other side's (drivers [%s])", side.name, other.Pools, side.other)
		}
		configs[side.name] = own
	}
	for _, tree := range []string{"pci", "rxe-vm"} {
		devs, _, err := rdma.Discover(rdma.Roots{Sys: "../pkg/rdma/testdata/" + tree + "/sys", Dev: "../pkg/rdma/testdata/" + tree + "/dev"})
		if err != nil {
			t.Fatal(err)
		}
		if err := plugin.RefuseOverlaps(configs["plugin"], configs["dra"], devs, plugin.SideDevicePlugin, plugin.SideDRA); err != nil {
			t.Errorf("%s tree: %v", tree, err)
		}
	}
	for _, mode := range []string{"deviceplugin", "dra"} {
		for key, u := range render(t, "", "plugin.mode="+mode) {
			if strings.HasPrefix(key, "DaemonSet/") && strings.Contains(fmt.Sprint(u.Object), "--other-config") {
				t.Errorf("mode %s: %s has --other-config", mode, key)
			}
		}
	}
}

// TestDRARollingUpdate: by default a new driver pod starts next to the old one (maxSurge
// 1, maxUnavailable 0) and is given its pod UID (the kubeletplugin helper's
// RollingUpdate); plugin.dra.rollingUpdate=false stops the old pod first, without it.
func TestDRARollingUpdate(t *testing.T) {
	for _, tc := range []struct {
		set                string
		surge, unavailable string
		podUID             bool
	}{
		{"", "1", "0", true},
		{"plugin.dra.rollingUpdate=false", "0", "1", false},
	} {
		set := []string{"plugin.mode=dra"}
		if tc.set != "" {
			set = append(set, tc.set)
		}
		var ds appsv1.DaemonSet
		render(t, "", set...).get(t, "DaemonSet/rc-ringcap-dra", &ds)
		ru := ds.Spec.UpdateStrategy.RollingUpdate
		if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ru == nil || ru.MaxSurge == nil || ru.MaxUnavailable == nil ||
			ru.MaxSurge.String() != tc.surge || ru.MaxUnavailable.String() != tc.unavailable {
			t.Errorf("%q: update strategy %+v, want maxSurge %s maxUnavailable %s", tc.set, ds.Spec.UpdateStrategy, tc.surge, tc.unavailable)
		}
		c := ds.Spec.Template.Spec.Containers[0]
		var uid *corev1.EnvVar
		for i, e := range c.Env {
			if e.Name == "POD_UID" {
				uid = &c.Env[i]
			}
		}
		hasArg := slices.Contains(c.Args, "--pod-uid=$(POD_UID)")
		if tc.podUID != (uid != nil && uid.ValueFrom != nil && uid.ValueFrom.FieldRef != nil && uid.ValueFrom.FieldRef.FieldPath == "metadata.uid") || tc.podUID != hasArg {
			t.Errorf("%q: POD_UID env %+v, --pod-uid arg %v; want both %v", tc.set, uid, hasArg, tc.podUID)
		}
	}
}

// TestDRAConfig: the driver takes plugin.config unless plugin.dra.config is set (mode
// both with disjoint selectors), and either is a valid plugin config.
func TestDRAConfig(t *testing.T) {
	cfgOf := func(objs rendered) *plugin.Config {
		var cm corev1.ConfigMap
		objs.get(t, "ConfigMap/rc-ringcap-dra", &cm)
		c, err := plugin.ParseConfig([]byte(cm.Data["config.yaml"]))
		if err != nil {
			t.Fatalf("driver config: %v\n%s", err, cm.Data["config.yaml"])
		}
		return c
	}
	if c := cfgOf(render(t, "", "plugin.mode=dra")); len(c.Pools) != 1 || c.Pools[0].Name != "rdma" {
		t.Errorf("default driver config pools %+v", c.Pools)
	}
	c := cfgOf(render(t, `plugin:
  mode: both
  config: {version: v1, pools: [{name: rdma, selector: {drivers: [mlx5_core]}}]}
  dra:
    config: {version: v1, pools: [{name: soft, selector: {drivers: [rdma_rxe]}}]}
`))
	if len(c.Pools) != 1 || c.Pools[0].Name != "soft" || !slices.Equal(c.Pools[0].Selector.Drivers, []string{"rdma_rxe"}) {
		t.Errorf("dra.config not used: %+v", c.Pools)
	}
	if out, err := helm(t, "template", "rc", chartDir, "--set", "plugin.mode=dra", "--set", "plugin.dra.cdiDir=relative"); err == nil {
		t.Errorf("a relative CDI directory was accepted:\n%s", out[:min(len(out), 200)])
	}
}

// TestDeviceClassesSelect evaluates the chart's DeviceClass CEL selectors (with DRA's
// own CEL compiler) against the devices the driver publishes for the testdata trees.
func TestDeviceClassesSelect(t *testing.T) {
	objs := render(t, "", "plugin.mode=dra")
	var devs []dra.PortDevice
	for _, tree := range []string{"pci", "rxe-vm"} {
		roots := rdma.Roots{Sys: "../pkg/rdma/testdata/" + tree + "/sys", Dev: "../pkg/rdma/testdata/" + tree + "/dev"}
		found, _, err := rdma.Discover(roots)
		if err != nil {
			t.Fatal(err)
		}
		pds, _, err := dra.PortDevices(plugin.DefaultConfig(), found, dra.PCIeRoots(roots.Sys, found))
		if err != nil {
			t.Fatal(err)
		}
		devs = append(devs, pds...)
	}
	for class, want := range map[string][]string{
		"rc-ringcap-rdma":    {"mlx5-0-p1", "mlx5-2-p1", "rxe0-p1", "rxe1-p1"},
		"rc-ringcap-roce-v2": {"mlx5-0-p1", "rxe0-p1", "rxe1-p1"}, // not the InfiniBand port
	} {
		var dc resourceapi.DeviceClass
		objs.get(t, "DeviceClass/"+class, &dc)
		if len(dc.Spec.Selectors) != 1 || dc.Spec.Selectors[0].CEL == nil {
			t.Fatalf("%s: selectors %+v", class, dc.Spec.Selectors)
		}
		expr := dc.Spec.Selectors[0].CEL.Expression
		prog := cel.GetCompiler(cel.Features{}).CompileCELExpression(expr, cel.Options{})
		if prog.Error != nil {
			t.Fatalf("%s: %q does not compile: %v", class, expr, prog.Error)
		}
		var got []string
		for _, d := range devs {
			ok, _, err := prog.DeviceMatches(context.Background(), cel.Device{Driver: dra.DriverName, Attributes: d.Attributes()})
			if err != nil {
				t.Errorf("%s on %s: %v", class, d.Name, err)
			}
			if ok {
				got = append(got, d.Name)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s (%s) selects %v, want %v", class, strings.Join(strings.Fields(expr), " "), got, want)
		}
	}
	if _, ok := render(t, "", "plugin.mode=dra", "plugin.dra.deviceClasses=false")["DeviceClass/rc-ringcap-rdma"]; ok {
		t.Error("plugin.dra.deviceClasses=false still renders the DeviceClasses")
	}
}
