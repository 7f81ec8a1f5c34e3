package testio

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// Metric reads the value of the metric name (without labels) from the
// Prometheus text that url's /metrics serves, failing t when it cannot.
func Metric(t testing.TB, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %v", name, err)
			}
			return f
		}
	}
	t.Fatalf("no metric %s on /metrics", name)
	return 0
}
