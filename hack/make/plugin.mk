# RDMA device plugin (issue 5): pkg/rdma discovery, internal/plugin, cmd/plugin.
# Host tests run under `make test`; the VM tests (pkg/rdma, internal/plugin in
# test/vm/packages.txt) under `make test-vm`; the API-server test under
# test-plugin-envtest (envtest-assets and ENVTEST_ASSETS come from operator.mk).

BENCH += bench-plugin
TEST_ALL += test-plugin-envtest

.PHONY: plugin bench-plugin capture-rxe-sysfs fuzz-rdma test-plugin-envtest

## plugin: build bin/plugin (pure Go, CGO_ENABLED=0)
plugin:
	CGO_ENABLED=0 $(GO) build -o bin/plugin ./cmd/plugin

## test-plugin-envtest: the plugin publishes labels and its RDMANode to a real kube-apiserver (CRD from config/crd/bases) with only the RBAC it documents
test-plugin-envtest: envtest-assets
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(GO) test -count=1 -tags envtest -run 'OnAPIServer' -timeout 10m ./internal/plugin

## bench-plugin: discovery time and RSS for 1, 8, 64 synthetic devices; port-state change -> ListAndWatch latency
bench-plugin:
	$(GO) test -count=1 -run '^$$' -bench BenchmarkDiscover -benchtime 10x ./pkg/rdma
	$(GO) test -count=1 -run '^$$' -bench BenchmarkPropagation -benchtime 10x ./internal/plugin

## capture-rxe-sysfs: re-capture pkg/rdma/testdata/rxe-vm (sysfs of the real rxe devices) in the Soft-RoCE VM
capture-rxe-sysfs: vm-image
	pkg/rdma/testdata/capture-sysfs.sh

## fuzz-rdma: run the sysfs parser fuzzers (corpora in pkg/rdma/testdata/fuzz)
fuzz-rdma:
	$(GO) test -run '^$$' -fuzz '^FuzzParseGID$$' -fuzztime 30s ./pkg/rdma
	$(GO) test -run '^$$' -fuzz '^FuzzParseAttr$$' -fuzztime 30s ./pkg/rdma
