# Packaging and the end-to-end tier (issue 7): images, Helm chart, the real cluster with Soft-RoCE.
# See test/e2e/README.md.
.PHONY: images test-chart chart-manifests e2e e2e-up e2e-down e2e-kind bench-capture-start bench-capture-start-combine
.SECONDEXPANSION:

## images: build ringcap/{plugin,operator,ringcap}:TAG from the working tree without Docker
images:
	hack/images/build.sh

## test-chart: helm lint + template tests of charts/ringcap, and the image builder's tests
test-chart:
	$(GO) test -count=1 -tags helm ./charts/ ./hack/images/...

## chart-manifests: copy the generated CRDs and operator RBAC into the chart (part of generate)
chart-manifests: $$(filter-out chart-manifests,$$(GENERATE))
	@ls config/crd/bases/*.yaml config/rbac/role.yaml >/dev/null || { echo "chart-manifests: run the operator's generators first (config/crd/bases, config/rbac/role.yaml)"; exit 1; }
	rm -f charts/ringcap/files/crds/*.yaml
	cp config/crd/bases/*.yaml charts/ringcap/files/crds/
	cp config/rbac/role.yaml charts/ringcap/files/operator-role.yaml

## e2e: real single-node Kubernetes with its node in the Soft-RoCE VM; installs the chart, runs test/e2e
e2e:
	test/e2e/harness/e2e.sh

## bench-capture-start: on the e2e cluster: RingCapture created -> receiver Listening with its endpoint in status, beside a plain pod of the same image and resource reaching Running (ratio capture-start/pod-start; BENCH_START_ROUNDS rounds, default 5, numbered from BENCH_START_FIRST_ROUND, default 1: issue 38's 10 rounds are two parts, BENCH_START_FIRST_ROUND=1 and 6, pooled by bench-capture-start-combine; one VM user at a time: hold the VM lock)
# The test's timeout grows with BENCH_START_ROUNDS: 2 min a round (a round takes about 90 s on
# the TCG node) and 2 min for the install.
bench-capture-start:
	@mkdir -p bin
	E2E_RUN='^TestBenchCaptureStart$$' RINGCAP_BENCH_START=1 E2E_TIMEOUT=$${E2E_TIMEOUT:-$$((2 + 2 * $${BENCH_START_ROUNDS:-5}))m} test/e2e/harness/e2e.sh | tee $(call bench-log,bench-capture-start)
	$(call bench-record,make bench-capture-start,e2e,$(call bench-log,bench-capture-start))

## bench-capture-start-combine: one figure from several bench-capture-start logs (BENCH_START_LOGS='a.log b.log ...'; each part run with its own BENCH_START_FIRST_ROUND; only passed runs, no round twice; see hack/benchdra)
bench-capture-start-combine:
	@test -n "$(BENCH_START_LOGS)" || { echo "bench-capture-start-combine: set BENCH_START_LOGS to the logs of the bench-capture-start parts" >&2; exit 2; }
	@mkdir -p bin
	$(GO) run ./hack/benchdra -test TestBenchCaptureStart $(BENCH_START_LOGS) | tee $(call bench-log,bench-capture-start-combine)
	$(call bench-record,make bench-capture-start-combine,e2e,$(call bench-log,bench-capture-start-combine))

## e2e-up: bring the e2e cluster up and leave it running (e2e-down tears it down)
e2e-up:
	test/e2e/harness/up.sh

## e2e-down: tear down the cluster of e2e-up
e2e-down:
	test/e2e/harness/down.sh

## e2e-kind: the same suite on a kind cluster with Soft-RoCE on the host (needs Docker; not in CI)
e2e-kind:
	test/e2e/harness/kind.sh

GENERATE += chart-manifests
TEST_ALL += test-chart e2e
