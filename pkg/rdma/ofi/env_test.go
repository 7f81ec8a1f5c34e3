package ofi

import (
	"os"
	"regexp"
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
