package main

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// none stands for a value the status does not have (yet).
const none = "-"

// orNone returns s, or none when it is empty.
func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}

// iecBytes formats n bytes with binary prefixes and one decimal, e.g. "6.0 MiB".
func iecBytes(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n) / unit
	prefixes := "KMGTPE"
	i := 0
	for (v >= unit || v <= -unit) && i < len(prefixes)-1 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, prefixes[i])
}

// age is how long before now t was, as kubectl prints ages ("5m", "2d3h"); none when t is unset.
func age(t *metav1.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return none
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// ago is age followed by " ago" (none when t is unset).
func ago(t *metav1.Time, now time.Time) string {
	if a := age(t, now); a != none {
		return a + " ago"
	}
	return none
}

// timestamp prints t in UTC as RFC 3339 with its age, e.g. "2026-11-28T13:45:00Z (5m ago)".
func timestamp(t *metav1.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return none
	}
	return fmt.Sprintf("%s (%s)", t.UTC().Format(time.RFC3339), ago(t, now))
}
