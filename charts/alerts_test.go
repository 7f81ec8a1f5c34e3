//go:build helm

package charts

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const (
	alertsFile     = "ringcap/files/alerts.yaml"
	alertsTestFile = "testdata/alerts-test.yaml"
	runbookPage    = "../docs/alerts.md"
	runbookPrefix  = "https://github.com/ringcap/ringcap/blob/main/docs/alerts.md#"
)

type ruleFile struct {
	Groups []struct {
		Rules []struct {
			Alert       string            `json:"alert"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

type ruleTests struct {
	Tests []struct {
		AlertRuleTest []struct {
			Alertname string           `json:"alertname"`
			ExpAlerts []map[string]any `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

func promtool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	p := filepath.Join(os.Getenv("RINGCAP_TOOLS"), "promtool")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("promtool not found in PATH or at %s: run hack/install-tools.sh", p)
	}
	return p
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// The alert rules pass promtool's check and their unit tests (synthetic series), every
// alert is tested firing, and every alert's runbook_url names a section of docs/alerts.md.
func TestAlertRules(t *testing.T) {
	for _, args := range [][]string{{"check", "rules", alertsFile}, {"test", "rules", alertsTestFile}} {
		if out, err := exec.Command(promtool(t), args...).CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	var rules ruleFile
	readYAML(t, alertsFile, &rules)
	var tests ruleTests
	readYAML(t, alertsTestFile, &tests)
	fired := map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			fired[a.Alertname] = fired[a.Alertname] || len(a.ExpAlerts) > 0
		}
	}
	anchors := runbookAnchors(t)
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			if !fired[r.Alert] {
				t.Errorf("alert %s: no test in %s expects it to fire", r.Alert, alertsTestFile)
			}
			anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], runbookPrefix)
			if !ok || !anchors[anchor] {
				t.Errorf("alert %s: runbook_url %q is not a section of docs/alerts.md (%s...)", r.Alert, r.Annotations["runbook_url"], runbookPrefix)
			}
		}
	}
	if n == 0 {
		t.Fatalf("no alerts in %s", alertsFile)
	}
}

// runbookAnchors are the GitHub anchors of docs/alerts.md's second-level headings.
func runbookAnchors(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(runbookPage)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	drop := regexp.MustCompile(`[^a-z0-9 -]`)
	for _, line := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			out[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")] = true
		}
	}
	return out
}
