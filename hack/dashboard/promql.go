package main

import (
	"regexp"
	"slices"
)

var (
	// promqlNoise are the parts of a PromQL expression that hold no metric name: strings,
	// label matchers, ranges and the label lists of by, without, on and ignoring.
	promqlNoise = regexp.MustCompile(`"[^"]*"|\{[^}]*\}|\[[^\]]*\]|\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	// promqlName is an identifier, with the "(" of a call when it is a function.
	promqlName = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?`)
	// promqlWords are PromQL's keywords, which look like names.
	promqlWords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan"}
)

// metricNames are the metric names a PromQL expression selects, in order, without repeats
// (a lexical reading, enough for the dashboard's own queries: a test checks them).
func metricNames(expr string) []string {
	var names []string
	for _, m := range promqlName.FindAllStringSubmatch(promqlNoise.ReplaceAllString(expr, " "), -1) {
		name, call := m[1], m[2] != ""
		if call || slices.Contains(promqlWords, name) || slices.Contains(names, name) {
			continue
		}
		names = append(names, name)
	}
	return names
}
