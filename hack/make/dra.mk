# DRA driver (issue 37): internal/dra, cmd/plugin --mode=dra, the chart's plugin.mode dra|both.
# Host tests run under `make test`; the API-server test here (envtest-assets and
# ENVTEST_ASSETS come from operator.mk; helm renders the chart's RBAC).

TEST_ALL += test-dra-envtest

.PHONY: test-dra-envtest

## test-dra-envtest: the DRA driver publishes its ResourceSlice, follows port changes and writes claim status on a real kube-apiserver, as the chart's service account
test-dra-envtest: envtest-assets
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(GO) test -count=1 -tags envtest -run 'OnAPIServer' -timeout 10m ./internal/dra
