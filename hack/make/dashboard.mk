# The Grafana dashboard (issue 54): built in Go with the Grafana Foundation SDK
# (hack/dashboard) into the chart's files/dashboard.json, which verify-gen diffs.
GENERATE += generate-dashboard

.PHONY: generate-dashboard

## generate-dashboard: charts/ringcap/files/dashboard.json, the Grafana dashboard, from hack/dashboard (part of generate)
generate-dashboard:
	$(GO) run ./hack/dashboard
