# DRA driver (issue 37): internal/dra, cmd/plugin --mode=dra, the chart's plugin.mode dra|both.
# Host tests run under `make test`; the API-server test here (envtest-assets and
# ENVTEST_ASSETS come from operator.mk; helm renders the chart's RBAC).

TEST_ALL += test-dra-envtest

.PHONY: test-dra-envtest

## test-dra-envtest: the DRA driver publishes its ResourceSlice, follows port changes, writes claim status, frees claims the API no longer has and runs as two instances of a rolling update on a real kube-apiserver, as the chart's service account
test-dra-envtest: envtest-assets
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(GO) test -count=1 -tags envtest -run 'OnAPIServer' -timeout 10m ./internal/dra

.PHONY: bench-dra bench-dra-combine

## bench-dra: on the e2e cluster (plugin.mode both): claim -> pod Running against the device plugin's extended resource, and port down -> slice against ListAndWatch (one VM user at a time: hold the VM lock)
# The test's timeout grows with BENCH_DRA_ROUNDS: 3 min a round (what a round takes on the
# TCG node when the machine is busy), 3 min for the install and 12 for the port-down runs
# (portwatch's own limit in the guest).
bench-dra:
	@mkdir -p bin
	E2E_RUN='^TestBenchDRA$$' RINGCAP_BENCH_DRA=1 E2E_TIMEOUT=$${E2E_TIMEOUT:-$$((15 + 3 * $${BENCH_DRA_ROUNDS:-6}))m} test/e2e/harness/e2e.sh | tee $(call bench-log,bench-dra)
	$(call bench-record,make bench-dra,e2e,$(call bench-log,bench-dra))

## bench-dra-combine: one figure from several bench-dra logs (BENCH_DRA_LOGS='a.log b.log ...'; each part run with its own BENCH_DRA_FIRST_ROUND, see hack/benchdra)
bench-dra-combine:
	@test -n "$(BENCH_DRA_LOGS)" || { echo "bench-dra-combine: set BENCH_DRA_LOGS to the logs of the bench-dra parts" >&2; exit 2; }
	@mkdir -p bin
	$(GO) run ./hack/benchdra -test TestBenchDRA $(BENCH_DRA_LOGS) | tee $(call bench-log,bench-dra-combine)
	$(call bench-record,make bench-dra-combine,e2e,$(call bench-log,bench-dra-combine))
