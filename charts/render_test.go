//go:build helm

package charts

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/ringcap/ringcap/internal/plugin"
)

const chartDir = "ringcap"

func helmBin(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	p := filepath.Join(os.Getenv("RINGCAP_TOOLS"), "helm")
	if os.Getenv("RINGCAP_TOOLS") == "" {
		p = "/var/tmp/ringcap/bin/helm"
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("helm not found in PATH or at %s: run hack/install-tools.sh", p)
	}
	return p
}

func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBin(t), args...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	if err != nil {
		return out.String(), errors.New(strings.TrimSpace(stderr.String()))
	}
	return out.String(), nil
}

// rendered is the output of one `helm template`, indexed by kind/name, or by
// kind/namespace/name for objects in a namespace other than the release's.
type rendered map[string]*unstructured.Unstructured

func render(t *testing.T, values string, set ...string) rendered {
	t.Helper()
	return renderAs(t, "rc", values, set...)
}

// renderAs renders the chart as the release named release in namespace ringcap-system.
func renderAs(t *testing.T, release, values string, set ...string) rendered {
	t.Helper()
	args := []string{"template", release, chartDir, "--namespace", "ringcap-system"}
	if values != "" {
		f := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(f, []byte(values), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-f", f)
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v", strings.Join(args, " "), err)
	}
	objs := rendered{}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("decode rendered chart: %v", err)
		}
		if m == nil {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		key := u.GetKind() + "/" + u.GetName()
		if ns := u.GetNamespace(); ns != "" && ns != "ringcap-system" {
			key = u.GetKind() + "/" + ns + "/" + u.GetName()
		}
		if _, dup := objs[key]; dup {
			t.Fatalf("chart renders %s twice", key)
		}
		objs[key] = u
	}
	return objs
}

// get converts the rendered object kind/name into out (a typed API object).
func (r rendered) get(t *testing.T, key string, out any) {
	t.Helper()
	u, ok := r[key]
	if !ok {
		t.Fatalf("chart does not render %s; it renders %v", key, r.keys())
	}
	b, err := yaml.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, out); err != nil {
		t.Fatalf("%s is not a valid %T: %v", key, out, err)
	}
}

func (r rendered) keys() []string {
	var k []string
	for key := range r {
		k = append(k, key)
	}
	slices.Sort(k)
	return k
}

func TestLint(t *testing.T) {
	for _, set := range [][]string{nil, {"crds.install=false", "operator.metrics.service=false", "operator.leaderElection=false"}} {
		args := []string{"lint", "--strict", chartDir}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		if out, err := helm(t, args...); err != nil {
			t.Errorf("helm %v: %v\n%s", args, err, out)
		}
	}
}

func TestDefaults(t *testing.T) {
	objs := render(t, "")
	chart := chartVersion(t)

	// CRDs: every file of files/crds, kept on uninstall
	crdFiles, _ := filepath.Glob(filepath.Join(chartDir, "files/crds/*.yaml"))
	var crds []string
	for key, u := range objs {
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		crds = append(crds, key)
		var crd apiextensionsv1.CustomResourceDefinition
		objs.get(t, key, &crd)
		if crd.Annotations["helm.sh/resource-policy"] != "keep" {
			t.Errorf("%s: no helm.sh/resource-policy=keep annotation", key)
		}
		if crd.Spec.Group != "ringcap.io" {
			t.Errorf("%s: group %q", key, crd.Spec.Group)
		}
	}
	if len(crdFiles) == 0 || len(crds) != len(crdFiles) {
		t.Errorf("rendered CRDs %v, files %v", crds, crdFiles)
	}

	// operator
	var dep appsv1.Deployment
	objs.get(t, "Deployment/rc-ringcap-operator", &dep)
	if dep.Namespace != "ringcap-system" || *dep.Spec.Replicas != 1 {
		t.Errorf("operator Deployment namespace %q replicas %d", dep.Namespace, *dep.Spec.Replicas)
	}
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	if c.Image != "ringcap/operator:"+chart {
		t.Errorf("operator image %q, want the appVersion tag %q", c.Image, chart)
	}
	for _, a := range []string{"--leader-elect=true", "--metrics-bind-address=:8080", "--health-probe-bind-address=:8081",
		"--receiver-image=ringcap/ringcap:" + chart, "--image-pull-policy=IfNotPresent"} {
		if !slices.Contains(c.Args, a) {
			t.Errorf("operator args %q lack %q", c.Args, a)
		}
	}
	if pod.ServiceAccountName != "rc-ringcap-operator" || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Errorf("operator pod: SA %q, securityContext %+v", pod.ServiceAccountName, pod.SecurityContext)
	}
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem ||
		!slices.Contains(c.SecurityContext.Capabilities.Drop, "ALL") {
		t.Errorf("operator container securityContext %+v", c.SecurityContext)
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" && p.ContainerPort == 8080 }) {
		t.Errorf("operator ports %+v", c.Ports)
	}
	var svc corev1.Service
	objs.get(t, "Service/rc-ringcap-operator-metrics", &svc)
	if svc.Spec.Selector["app.kubernetes.io/component"] != "operator" || svc.Spec.Ports[0].Port != 8080 {
		t.Errorf("metrics Service %+v", svc.Spec)
	}
	var cr rbacv1.ClusterRole
	objs.get(t, "ClusterRole/rc-ringcap-operator", &cr)
	if !grants(cr.Rules, "ringcap.io", "ringcaptures", "watch") || !grants(cr.Rules, "ringcap.io", "ringcaptures/status", "update") ||
		!grants(cr.Rules, "", "pods", "create") || !grants(cr.Rules, "", "pods", "delete") ||
		!grants(cr.Rules, "", "pods", "patch") { // a failed capture's pod is stopped through its activeDeadlineSeconds
		t.Errorf("operator ClusterRole cannot manage RingCaptures and their pods: %+v", cr.Rules)
	}
	var role rbacv1.Role
	objs.get(t, "Role/rc-ringcap-operator-leader-election", &role)
	if !grants(role.Rules, "coordination.k8s.io", "leases", "update") {
		t.Errorf("leader election Role %+v", role.Rules)
	}
	checkBinding(t, objs, "ClusterRoleBinding/rc-ringcap-operator", "rc-ringcap-operator")
	checkBinding(t, objs, "RoleBinding/rc-ringcap-operator-leader-election", "rc-ringcap-operator")

	// plugin
	var ds appsv1.DaemonSet
	objs.get(t, "DaemonSet/rc-ringcap-plugin", &ds)
	ps := ds.Spec.Template.Spec
	pc := ps.Containers[0]
	if pc.Image != "ringcap/plugin:"+chart {
		t.Errorf("plugin image %q", pc.Image)
	}
	for _, a := range []string{"--config=/etc/ringcap/config.yaml", "--kubelet-dir=/var/lib/kubelet/device-plugins",
		"--node-name=$(NODE_NAME)", "--metrics-addr=:9101", "--dev-root=/dev", "--pod-resources-socket=/var/lib/kubelet/pod-resources/kubelet.sock"} {
		if !slices.Contains(pc.Args, a) {
			t.Errorf("plugin args %q lack %q", pc.Args, a)
		}
	}
	if len(pc.Env) != 1 || pc.Env[0].Name != "NODE_NAME" || pc.Env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("plugin env %+v", pc.Env)
	}
	// least privilege: not privileged, nothing from the host but the four paths, all capabilities dropped
	sc := pc.SecurityContext
	if sc == nil || (sc.Privileged != nil && *sc.Privileged) || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("plugin securityContext is not least-privilege: %+v", sc)
	}
	if ps.HostNetwork || ps.HostPID || ps.HostIPC {
		t.Errorf("plugin shares host namespaces: network %v pid %v ipc %v", ps.HostNetwork, ps.HostPID, ps.HostIPC)
	}
	hostPaths := map[string]string{}
	for _, v := range ps.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	wantHP := map[string]string{"device-plugins": "/var/lib/kubelet/device-plugins", "sys": "/sys", "infiniband": "/dev/infiniband",
		"pod-resources": "/var/lib/kubelet/pod-resources"}
	if !mapsEqual(hostPaths, wantHP) {
		t.Errorf("plugin hostPath volumes %v, want %v", hostPaths, wantHP)
	}
	for _, m := range pc.VolumeMounts {
		writable := !m.ReadOnly
		if writable != (m.Name == "device-plugins") {
			t.Errorf("plugin mount %s readOnly=%v: only the device-plugin directory may be writable", m.Name, m.ReadOnly)
		}
	}
	if ps.PriorityClassName != "system-node-critical" {
		t.Errorf("plugin priorityClassName %q", ps.PriorityClassName)
	}
	var cm corev1.ConfigMap
	objs.get(t, "ConfigMap/rc-ringcap-plugin", &cm)
	// the plugin itself accepts the rendered configuration
	cfg, err := plugin.ParseConfig([]byte(cm.Data["config.yaml"]))
	if err != nil || len(cfg.Pools) != 1 || cfg.Pools[0].Name != "rdma" {
		t.Errorf("plugin config %q: %+v %v", cm.Data["config.yaml"], cfg, err)
	}
	var pcr rbacv1.ClusterRole
	objs.get(t, "ClusterRole/rc-ringcap-plugin", &pcr)
	if !grants(pcr.Rules, "ringcap.io", "rdmanodes", "create") || !grants(pcr.Rules, "", "nodes", "patch") ||
		grants(pcr.Rules, "", "pods", "create") || grants(pcr.Rules, "", "secrets", "get") || !grants(pcr.Rules, "", "pods", "get") {
		t.Errorf("plugin ClusterRole %+v", pcr.Rules)
	}
	checkBinding(t, objs, "ClusterRoleBinding/rc-ringcap-plugin", "rc-ringcap-plugin")
	for _, sa := range []string{"ServiceAccount/rc-ringcap-operator", "ServiceAccount/rc-ringcap-plugin"} {
		if _, ok := objs[sa]; !ok {
			t.Errorf("no %s", sa)
		}
	}
}

// TestCustomValues renders what the e2e cluster and an observatory install use.
func TestCustomValues(t *testing.T) {
	objs := render(t, `
image: {tag: abc123, pullPolicy: Never}
crds: {install: false}
operator:
  replicas: 2
  receiverImage: {repository: registry.example.org/ringcap/ringcap, tag: v9}
  extraArgs: [--max-concurrent-reconciles=4]
  nodeSelector: {node-role.kubernetes.io/control-plane: ""}
plugin:
  config:
    version: v1
    pools:
      - {name: rdma, selector: {devices: [rxe0]}}
      - {name: rdma-ib, selector: {drivers: [mlx5_core]}, sharing: {mode: shared, maxPodsPerDevice: 4}, gidPolicy: {mode: index, index: 3}}
  kubeletDir: /var/lib/k0s/kubelet
  nodeSelector: {ringcap.io/rdma: "true"}
`)
	for key := range objs {
		if strings.HasPrefix(key, "CustomResourceDefinition/") {
			t.Errorf("crds.install=false still renders %s", key)
		}
	}
	var dep appsv1.Deployment
	objs.get(t, "Deployment/rc-ringcap-operator", &dep)
	c := dep.Spec.Template.Spec.Containers[0]
	if *dep.Spec.Replicas != 2 || c.Image != "ringcap/operator:abc123" || c.ImagePullPolicy != corev1.PullNever {
		t.Errorf("operator replicas %d image %q policy %q", *dep.Spec.Replicas, c.Image, c.ImagePullPolicy)
	}
	for _, a := range []string{"--receiver-image=registry.example.org/ringcap/ringcap:v9", "--image-pull-policy=Never", "--max-concurrent-reconciles=4"} {
		if !slices.Contains(c.Args, a) {
			t.Errorf("operator args %q lack %q", c.Args, a)
		}
	}
	var ds appsv1.DaemonSet
	objs.get(t, "DaemonSet/rc-ringcap-plugin", &ds)
	ps := ds.Spec.Template.Spec
	if ps.NodeSelector["ringcap.io/rdma"] != "true" || ps.Containers[0].Image != "ringcap/plugin:abc123" {
		t.Errorf("plugin nodeSelector %v image %q", ps.NodeSelector, ps.Containers[0].Image)
	}
	if !slices.Contains(ps.Containers[0].Args, "--kubelet-dir=/var/lib/k0s/kubelet/device-plugins") ||
		!slices.Contains(ps.Containers[0].Args, "--pod-resources-socket=/var/lib/k0s/kubelet/pod-resources/kubelet.sock") {
		t.Errorf("plugin args %q ignore kubeletDir", ps.Containers[0].Args)
	}
	var cm corev1.ConfigMap
	objs.get(t, "ConfigMap/rc-ringcap-plugin", &cm)
	cfg, err := plugin.ParseConfig([]byte(cm.Data["config.yaml"]))
	if err != nil {
		t.Fatalf("the plugin refuses the rendered config %q: %v", cm.Data["config.yaml"], err)
	}
	if len(cfg.Pools) != 2 || cfg.Pools[1].Sharing.MaxPodsPerDevice != 4 || !slices.Equal(cfg.Pools[1].Selector.Drivers, []string{"mlx5_core"}) {
		t.Errorf("plugin config not passed through: %q -> %+v", cm.Data["config.yaml"], cfg)
	}
	// image.registry prefixes every image
	reg := render(t, "image: {registry: registry.example.org:5000/obs/, tag: t1}\n")
	var regDep appsv1.Deployment
	var regDS appsv1.DaemonSet
	reg.get(t, "Deployment/rc-ringcap-operator", &regDep)
	reg.get(t, "DaemonSet/rc-ringcap-plugin", &regDS)
	if img := regDep.Spec.Template.Spec.Containers[0].Image; img != "registry.example.org:5000/obs/ringcap/operator:t1" {
		t.Errorf("operator image %q with image.registry", img)
	}
	if img := regDS.Spec.Template.Spec.Containers[0].Image; img != "registry.example.org:5000/obs/ringcap/plugin:t1" {
		t.Errorf("plugin image %q with image.registry", img)
	}
	if !slices.Contains(regDep.Spec.Template.Spec.Containers[0].Args, "--receiver-image=registry.example.org:5000/obs/ringcap/ringcap:t1") {
		t.Errorf("operator args %q: the receiver image without image.registry", regDep.Spec.Template.Spec.Containers[0].Args)
	}
	// a changed pool configuration rolls the DaemonSet
	def := render(t, "")
	var defDS appsv1.DaemonSet
	def.get(t, "DaemonSet/rc-ringcap-plugin", &defDS)
	if ds.Spec.Template.Annotations["checksum/config"] == defDS.Spec.Template.Annotations["checksum/config"] {
		t.Error("the plugin pod template does not change when the pool configuration does")
	}
}

func TestSchemaRejectsBadValues(t *testing.T) {
	for _, tc := range []struct {
		set  string
		want string
	}{
		{"image.pullPolicy=Sometimes", "pullPolicy"},
		{"operator.replicas=-1", "replicas"},
		{"operator.replicas=2,operator.leaderElection=false", "leaderElection"},
		{"operator.metrics.port=70000", "port"},
		{"plugin.kubeletDir=relative/dir", "kubeletDir"},
		{"plugin.config.pools[0].name=Bad_Name", "name"},
		{"operator.imagee.repository=x", "imagee"},
		{"operator.image.repository=", "repository"},
		{"rbac.aggregateRoles=maybe", "aggregateRoles"},
		{"operator.watchNamespaces[0]=1", "watchNamespaces"},
		{"image.registry=https://registry.example.org", "registry"},
	} {
		_, err := helm(t, "template", "rc", chartDir, "--set", tc.set)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %s: err = %v, want a schema error about %q", tc.set, err, tc.want)
		}
	}
}

func TestNotesAndSample(t *testing.T) {
	for _, tc := range []struct {
		set  string
		want []string
	}{
		{"crds.install=true", []string{"kubectl get rdmanodes", "the chart's examples/ringcapture.yaml", "kubectl get rcap",
			"rollout status daemonset/rc-ringcap-plugin", "ringcap send --connect"}},
		{"crds.install=false", []string{"CRDs were NOT installed", "--set crds.install=true --show-only templates/crds.yaml | kubectl apply --server-side -f -"}},
		{"plugin.mode=dra", []string{"daemonset/rc-ringcap-dra", "spec.driver=rdma.ringcap.io", "DeviceClass rc-ringcap-rdma or rc-ringcap-roce-v2",
			"spec.receiver.deviceClassName: rc-ringcap-rdma to take its", "or use plugin.mode=both"}},
	} {
		notes := renderNotes(t, tc.set)
		for _, want := range tc.want {
			if !strings.Contains(notes, want) {
				t.Errorf("--set %s: NOTES lack %q:\n%s", tc.set, want, notes)
			}
		}
	}
	notes := renderNotes(t, "plugin.mode=deviceplugin")
	if strings.Contains(notes, "rdma.ringcap.io") {
		t.Errorf("NOTES mention the DRA driver in mode deviceplugin:\n%s", notes)
	}
	b, err := os.ReadFile(filepath.Join(chartDir, "examples/ringcapture.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The notes carry the chart's own sample, the heredoc a user pastes, not a URL of a
	// repository branch that may not match the installed chart.
	if strings.Contains(notes, "https://") || !strings.Contains(notes, "kubectl apply -f - <<'EOF'\n") ||
		heredoc(notes) != strings.TrimSuffix(string(b), "\n") {
		t.Errorf("NOTES do not carry examples/ringcapture.yaml as a heredoc:\n%s", notes)
	}
	var sample unstructured.Unstructured
	if err := yaml.UnmarshalStrict(b, &sample.Object); err != nil {
		t.Fatalf("sample RingCapture: %v", err)
	}
	if sample.GetKind() != "RingCapture" || sample.GetAPIVersion() != "ringcap.io/v1alpha1" || sample.GetName() == "" {
		t.Errorf("sample is %s %s %q", sample.GetAPIVersion(), sample.GetKind(), sample.GetName())
	}
}

// heredoc is the body of the notes' first heredoc, with its indentation removed.
func heredoc(notes string) string {
	_, body, _ := strings.Cut(notes, "<<'EOF'\n")
	body, _, _ = strings.Cut(body, "\n     EOF")
	lines := strings.Split(body, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "     ")
	}
	return strings.Join(lines, "\n")
}

// renderNotes renders NOTES.txt without a cluster (helm install --dry-run needs one): it copies
// the chart and wraps the notes into a ConfigMap template that helm template prints.
func renderNotes(t *testing.T, set string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ringcap")
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	notes, err := os.ReadFile(filepath.Join(dir, "templates/NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "templates/NOTES.txt")); err != nil {
		t.Fatal(err)
	}
	tpl := "{{- define \"test.notes\" -}}\n" + string(notes) + "\n{{- end -}}\n"
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\ndata:\n  notes: |\n{{ include \"test.notes\" . | indent 4 }}\n"
	if err := os.WriteFile(filepath.Join(dir, "templates/_test_notes.tpl"), []byte(tpl), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "templates/test-notes.yaml"), []byte(cm), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := helm(t, "template", "rc", dir, "--namespace", "ringcap-system", "--set", set, "--show-only", "templates/test-notes.yaml")
	if err != nil {
		t.Fatalf("render NOTES.txt: %v", err)
	}
	var m struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("rendered NOTES: %v\n%s", err, out)
	}
	return m.Data["notes"]
}

func grants(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if (slices.Contains(r.APIGroups, group) || slices.Contains(r.APIGroups, "*")) &&
			(slices.Contains(r.Resources, resource) || slices.Contains(r.Resources, "*")) &&
			(slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, "*")) {
			return true
		}
	}
	return false
}

func checkBinding(t *testing.T, objs rendered, key, sa string) {
	t.Helper()
	u, ok := objs[key]
	if !ok {
		t.Errorf("no %s", key)
		return
	}
	subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
	if len(subjects) != 1 || subjects[0].(map[string]any)["name"] != sa || subjects[0].(map[string]any)["namespace"] != "ringcap-system" {
		t.Errorf("%s subjects %v, want ServiceAccount ringcap-system/%s", key, subjects, sa)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func chartVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c.AppVersion
}

// plugin.podResources=false: no PodResources socket for the plugin (its per-capture link
// counters off), no mount of the kubelet's pod-resources directory, no reading of pods.
func TestPodResourcesOff(t *testing.T) {
	objs := render(t, "", "plugin.podResources=false")
	ds := objs.getDaemonSet(t, "DaemonSet/rc-ringcap-plugin")
	pc := ds.Spec.Template.Spec.Containers[0]
	if !slices.Contains(pc.Args, "--pod-resources-socket=") {
		t.Errorf("plugin args %q: want an empty --pod-resources-socket", pc.Args)
	}
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.Name == "pod-resources" {
			t.Errorf("volume %+v with plugin.podResources=false", v)
		}
	}
	for _, m := range pc.VolumeMounts {
		if m.Name == "pod-resources" {
			t.Errorf("mount %+v with plugin.podResources=false", m)
		}
	}
	var pcr rbacv1.ClusterRole
	objs.get(t, "ClusterRole/rc-ringcap-plugin", &pcr)
	if grants(pcr.Rules, "", "pods", "get") {
		t.Errorf("plugin ClusterRole reads pods with plugin.podResources=false: %+v", pcr.Rules)
	}
}
