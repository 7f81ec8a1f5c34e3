package ofi

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The C floor that make bench-ofi sets ringcap against (hack/capture/ofifloor) runs libfabric
// with the same environment defaults as the binding, so the two are compared on equal terms.
func TestFloorSetsTheEnvDefaults(t *testing.T) {
	src, err := os.ReadFile("../../../hack/capture/ofifloor/ofifloor.c")
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]string{}
	for _, m := range regexp.MustCompile(`setenv\("(\w+)", "([^"]*)", 0\)`).FindAllStringSubmatch(string(src), -1) {
		set[m[1]] = m[2]
	}
	for _, e := range EnvDefaults {
		if got, ok := set[e.Name]; !ok || got != e.Value {
			t.Errorf("ofifloor sets %s to %q (set: %v), want %q as EnvDefaults", e.Name, got, ok, e.Value)
		}
	}
	if len(set) != len(EnvDefaults) {
		t.Errorf("ofifloor sets %v, EnvDefaults %v", set, EnvDefaults)
	}
}

// EnvInEffect names every default with its value, and says where the environment chose another.
func TestEnvInEffect(t *testing.T) {
	env := map[string]string{"FI_OFI_RXM_BUFFER_SIZE": "16384", "FI_UNIVERSE_SIZE": "16"}
	got := envInEffect(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	for _, want := range []string{"FI_UNIVERSE_SIZE=16 ", "FI_OFI_RXM_MSG_RX_SIZE=128 ", "FI_OFI_RXM_BUFFER_SIZE=16384 (the environment's; ringcap's 1024)"} {
		if !strings.Contains(got, want) {
			t.Errorf("envInEffect = %q, want it to contain %q", got, want)
		}
	}
	if strings.Count(got, "the environment's") != 1 {
		t.Errorf("envInEffect = %q: only FI_OFI_RXM_BUFFER_SIZE differs from ringcap's", got)
	}
}
