package controller

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// The operator's --namespace takes several namespaces; the cache then watches each of
// them and nothing else.
func TestParseNamespaces(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" ", nil},
		{"obs", []string{"obs"}},
		{"obs,lab-2", []string{"obs", "lab-2"}},
		{" obs , lab-2 ,obs", []string{"obs", "lab-2"}},
	} {
		got, err := ParseNamespaces(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseNamespaces(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
		opts := CacheOptions(got)
		if keys := slices.Sorted(maps.Keys(opts.DefaultNamespaces)); !slices.Equal(keys, slices.Sorted(slices.Values(tc.want))) {
			t.Errorf("CacheOptions(%q) watches %q", got, keys)
		}
	}
	for _, in := range []string{"obs,", "obs,,lab", "Obs", "obs.lab", "-obs", strings.Repeat("a", 64)} {
		if got, err := ParseNamespaces(in); err == nil {
			t.Errorf("ParseNamespaces(%q) = %q, want an error", in, got)
		}
	}
}
