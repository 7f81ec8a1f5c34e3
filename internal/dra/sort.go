package dra

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

func sortUIDs(u []types.UID) { slices.Sort(u) }
func sortStrings(s []string) { slices.Sort(s) }
func sortDevices(p []PortDevice) {
	slices.SortFunc(p, func(a, b PortDevice) int { return strings.Compare(a.Name, b.Name) })
}
func runtimeRaw(b []byte) runtime.RawExtension { return runtime.RawExtension{Raw: b} }
