//go:build helm

package charts

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// The chart's ClusterRoles for the users of RingCaptures, aggregated into Kubernetes'
// built-in roles: the editor into admin and edit, the viewer into view.
func TestAggregatedRoles(t *testing.T) {
	objs := render(t, "")
	var editor, viewer rbacv1.ClusterRole
	objs.get(t, "ClusterRole/rc-ringcap-ringcapture-editor", &editor)
	objs.get(t, "ClusterRole/rc-ringcap-ringcapture-viewer", &viewer)
	for _, tc := range []struct {
		role     rbacv1.ClusterRole
		labels   []string
		notLabel string
	}{
		{editor, []string{"aggregate-to-admin", "aggregate-to-edit"}, "aggregate-to-view"},
		{viewer, []string{"aggregate-to-view"}, "aggregate-to-edit"},
	} {
		for _, l := range tc.labels {
			if tc.role.Labels["rbac.authorization.k8s.io/"+l] != "true" {
				t.Errorf("%s lacks the label rbac.authorization.k8s.io/%s: \"true\": %v", tc.role.Name, l, tc.role.Labels)
			}
		}
		if _, ok := tc.role.Labels["rbac.authorization.k8s.io/"+tc.notLabel]; ok {
			t.Errorf("%s is aggregated to %s", tc.role.Name, tc.notLabel)
		}
	}
	for _, v := range []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"} {
		if !grants(editor.Rules, "ringcap.io", "ringcaptures", v) {
			t.Errorf("the editor may not %s ringcaptures: %+v", v, editor.Rules)
		}
	}
	if !grants(editor.Rules, "ringcap.io", "ringcaptures/status", "get") || grants(editor.Rules, "ringcap.io", "ringcaptures/status", "update") {
		t.Errorf("the editor should read the status and not write it (the operator does): %+v", editor.Rules)
	}
	for _, res := range []string{"ringcaptures", "rdmanodes"} {
		for _, v := range []string{"get", "list", "watch"} {
			if !grants(viewer.Rules, "ringcap.io", res, v) {
				t.Errorf("the viewer may not %s %s: %+v", v, res, viewer.Rules)
			}
		}
		if grants(viewer.Rules, "ringcap.io", res, "create") || grants(viewer.Rules, "ringcap.io", res, "delete") {
			t.Errorf("the viewer may write %s: %+v", res, viewer.Rules)
		}
	}

	for key := range render(t, "", "rbac.aggregateRoles=false") {
		if strings.HasSuffix(key, "-ringcapture-editor") || strings.HasSuffix(key, "-ringcapture-viewer") {
			t.Errorf("rbac.aggregateRoles=false still renders %s", key)
		}
	}
}

// With operator.watchNamespaces the operator watches those namespaces only and its
// permissions on namespaced resources are a Role and RoleBinding in each; its rules on
// cluster-scoped resources (the RDMANodes and Nodes it reads for a capture's IPC_LOCK) stay
// in a ClusterRole.
func TestWatchNamespaces(t *testing.T) {
	generated := operatorRoleRules(t)
	cluster, namespaced := splitClusterScoped(generated, "nodes", "rdmanodes")
	if len(cluster) != 2 {
		t.Fatalf("generated role's rules on nodes and rdmanodes: %+v, want two", cluster)
	}
	objs := render(t, "operator: {watchNamespaces: [obs, lab-2]}\n")
	var cr rbacv1.ClusterRole
	objs.get(t, "ClusterRole/rc-ringcap-operator", &cr)
	if !reflect.DeepEqual(cr.Rules, cluster) {
		t.Errorf("watchNamespaces set: ClusterRole rules %+v, want only the cluster-scoped %+v", cr.Rules, cluster)
	}
	for _, ns := range []string{"obs", "lab-2"} {
		var role rbacv1.Role
		objs.get(t, "Role/"+ns+"/rc-ringcap-operator", &role)
		if !reflect.DeepEqual(role.Rules, namespaced) {
			t.Errorf("Role in %s: rules %+v, want the generated role's namespaced %+v", ns, role.Rules, namespaced)
		}
		var rb rbacv1.RoleBinding
		objs.get(t, "RoleBinding/"+ns+"/rc-ringcap-operator", &rb)
		if rb.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "rc-ringcap-operator"}) ||
			len(rb.Subjects) != 1 || rb.Subjects[0] != (rbacv1.Subject{Kind: "ServiceAccount", Name: "rc-ringcap-operator", Namespace: "ringcap-system"}) {
			t.Errorf("RoleBinding in %s: %+v %+v", ns, rb.RoleRef, rb.Subjects)
		}
	}
	if _, ok := objs["Role/rc-ringcap-operator-leader-election"]; !ok {
		t.Error("no leader election Role in the release namespace")
	}
	if args := operatorArgs(t, objs); !slices.Contains(args, "--namespace=obs,lab-2") {
		t.Errorf("operator args %q lack --namespace=obs,lab-2", args)
	}

	// unset: one ClusterRole with every rule, no --namespace
	def := render(t, "")
	def.get(t, "ClusterRole/rc-ringcap-operator", &cr)
	if !reflect.DeepEqual(cr.Rules, generated) {
		t.Errorf("ClusterRole rules %+v, want the generated role's %+v", cr.Rules, generated)
	}
	for key := range def {
		if strings.HasPrefix(key, "Role/") && key != "Role/rc-ringcap-operator-leader-election" {
			t.Errorf("watchNamespaces empty, the chart renders %s", key)
		}
	}
	if args := operatorArgs(t, def); slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--namespace") }) {
		t.Errorf("watchNamespaces empty, operator args %q name a namespace", args)
	}
}

func TestWatchNamespacesRefused(t *testing.T) {
	for _, tc := range []struct {
		values, want string
	}{
		{"[Obs]", `operator.watchNamespaces[0] "Obs" is not a namespace name: a namespace name is a DNS label`},
		{"[obs, a.b]", `operator.watchNamespaces[1] "a.b" is not a namespace name`},
		{"[obs-]", `"obs-" is not a namespace name`},
		{`[""]`, `operator.watchNamespaces[0] "" is not a namespace name`},
		{"[" + strings.Repeat("a", 64) + "]", "is not a namespace name: a namespace name is a DNS label (at most 63"},
		{"[obs, lab, obs]", `operator.watchNamespaces lists "obs" twice`},
	} {
		f := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(f, []byte("operator: {watchNamespaces: "+tc.values+"}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := helm(t, "template", "rc", chartDir, "-f", f)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("watchNamespaces %s: err = %v, want %q", tc.values, err, tc.want)
		}
	}
}

// operatorRoleRules is the operator's generated role (files/operator-role.yaml).
func operatorRoleRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, "files/operator-role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cr rbacv1.ClusterRole
	if err := yaml.Unmarshal(b, &cr); err != nil || len(cr.Rules) == 0 {
		t.Fatalf("files/operator-role.yaml: %v, %d rules", err, len(cr.Rules))
	}
	return cr.Rules
}

func operatorArgs(t *testing.T, objs rendered) []string {
	t.Helper()
	var dep appsv1.Deployment
	objs.get(t, "Deployment/rc-ringcap-operator", &dep)
	return dep.Spec.Template.Spec.Containers[0].Args
}

// splitClusterScoped splits rules into those on the named cluster-scoped resources and the
// rest (the generated role has one resource per rule).
func splitClusterScoped(rules []rbacv1.PolicyRule, clusterScoped ...string) (cluster, namespaced []rbacv1.PolicyRule) {
	for _, r := range rules {
		if len(r.Resources) == 1 && slices.Contains(clusterScoped, r.Resources[0]) {
			cluster = append(cluster, r)
		} else {
			namespaced = append(namespaced, r)
		}
	}
	return cluster, namespaced
}
