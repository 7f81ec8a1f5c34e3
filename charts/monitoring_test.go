//go:build helm

package charts

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// By default: scrape annotations on the plugin's pods, no Prometheus Operator objects.
func TestMonitoringDefaults(t *testing.T) {
	objs := render(t, "")
	for key := range objs {
		if strings.HasPrefix(key, "PodMonitor/") || strings.HasPrefix(key, "PrometheusRule/") {
			t.Errorf("default values render %s (needs the Prometheus Operator's CRDs)", key)
		}
	}
	var ds appsv1.DaemonSet
	objs.get(t, "DaemonSet/rc-ringcap-plugin", &ds)
	a := ds.Spec.Template.Annotations
	if a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != "9101" || a["prometheus.io/path"] != "/metrics" {
		t.Errorf("plugin pod annotations %v: want prometheus.io/scrape, port 9101, path /metrics", a)
	}
	if a := render(t, "", "monitoring.annotations=false").getDaemonSet(t, "DaemonSet/rc-ringcap-plugin").Spec.Template.Annotations; a["prometheus.io/scrape"] != "" {
		t.Errorf("monitoring.annotations=false: plugin pod annotations %v", a)
	}
}

// With the Prometheus Operator: a PodMonitor for each component the mode runs and one for
// the capture pods in the watched namespaces, with the user's labels; the PrometheusRule
// holds files/alerts.yaml's groups unchanged (their {{ $labels }} are Prometheus's).
func TestMonitoringObjects(t *testing.T) {
	objs := render(t, "", "monitoring.podMonitor.enabled=true", "monitoring.prometheusRule.enabled=true",
		"monitoring.podMonitor.labels.release=prom", "plugin.mode=dra", "operator.watchNamespaces={obs,lab}")
	for _, c := range []string{"operator", "dra", "captures"} {
		pm := objs.mustHave(t, "PodMonitor/rc-ringcap-"+c)
		if pm.GetLabels()["release"] != "prom" {
			t.Errorf("PodMonitor %s labels %v: want release=prom", c, pm.GetLabels())
		}
	}
	if _, ok := objs["PodMonitor/rc-ringcap-plugin"]; ok {
		t.Error("plugin.mode=dra renders a PodMonitor for the device plugin")
	}
	both := render(t, splitValues, "monitoring.podMonitor.enabled=true")
	for c, want := range map[string]bool{"operator": false, "plugin": true, "dra": true, "captures": false} {
		eps, _, _ := unstructured.NestedSlice(both.mustHave(t, "PodMonitor/rc-ringcap-"+c).Object, "spec", "podMetricsEndpoints")
		if len(eps) != 1 {
			t.Fatalf("PodMonitor %s endpoints %v", c, eps)
		}
		if got, _ := eps[0].(map[string]any)["honorLabels"].(bool); got != want {
			t.Errorf("PodMonitor %s honorLabels %v, want %v (the per-capture link counters keep the capture's namespace and pod)", c, got, want)
		}
	}
	caps := objs.mustHave(t, "PodMonitor/rc-ringcap-captures")
	names, _, _ := unstructured.NestedStringSlice(caps.Object, "spec", "namespaceSelector", "matchNames")
	sel, _, _ := unstructured.NestedStringMap(caps.Object, "spec", "selector", "matchLabels")
	if !reflect.DeepEqual(names, []string{"obs", "lab"}) || sel["app.kubernetes.io/component"] != "capture" {
		t.Errorf("captures PodMonitor: namespaces %v, selector %v", names, sel)
	}
	var file ruleFile
	readYAML(t, alertsFile, &file)
	rule := objs.mustHave(t, "PrometheusRule/rc-ringcap-alerts")
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	if len(groups) != len(file.Groups) {
		t.Fatalf("PrometheusRule has %d groups, files/alerts.yaml %d", len(groups), len(file.Groups))
	}
	if !strings.Contains(objs.text(t, "PrometheusRule/rc-ringcap-alerts"), "{{ $labels.namespace }}/{{ $labels.pod }}") {
		t.Error("the PrometheusRule lost the alerts' Prometheus templates")
	}
}

func (r rendered) mustHave(t *testing.T, key string) *unstructured.Unstructured {
	t.Helper()
	u, ok := r[key]
	if !ok {
		t.Fatalf("chart does not render %s; it renders %v", key, r.keys())
	}
	return u
}

func (r rendered) getDaemonSet(t *testing.T, key string) *appsv1.DaemonSet {
	t.Helper()
	var ds appsv1.DaemonSet
	r.get(t, key, &ds)
	return &ds
}

// text is the rendered object as YAML.
func (r rendered) text(t *testing.T, key string) string {
	t.Helper()
	b, err := yaml.Marshal(r.mustHave(t, key).Object)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
