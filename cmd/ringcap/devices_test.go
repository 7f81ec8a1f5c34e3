package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/pkg/capture/devices"
)

const efaTree = "../../pkg/rdma/testdata/efa"

// `ringcap devices` over the synthetic EFA tree: text by default, JSON with -o json.
func TestDevicesCommand(t *testing.T) {
	out, _ := mustRun(t, "devices", "--sys-root", efaTree+"/sys", "--dev-root", efaTree+"/dev")
	for _, want := range []string{
		"VERBS DEVICE", "efa_0", "efa_1", "Unspecified",
		"none (EFA has no RC queue pairs: use --transport ofi --ofi-provider efa --ofi-domain efa_0-rdm)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	out, _ = mustRun(t, "devices", "--sys-root", efaTree+"/sys", "--dev-root", efaTree+"/dev", "-o", "json")
	var r devices.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	if len(r.Verbs) != 2 || r.Verbs[1].Name != "efa_1" || r.Verbs[1].Ports[0].LinkLayer != "Unspecified" {
		t.Errorf("-o json verbs %+v", r.Verbs)
	}
	if _, _, err := ringcap(context.Background(), "devices", "-o", "yaml"); err == nil || !strings.Contains(err.Error(), "want text or json") {
		t.Errorf("-o yaml: %v", err)
	}
}
