# RDMA device plugin (issue 5): pkg/rdma discovery, internal/plugin, cmd/plugin.
# Host tests run under `make test`; the VM tests (pkg/rdma, internal/plugin in
# test/vm/packages.txt) under `make test-vm`.

BENCH += bench-plugin

.PHONY: plugin bench-plugin capture-rxe-sysfs fuzz-rdma

## plugin: build bin/plugin (pure Go, CGO_ENABLED=0)
plugin:
	CGO_ENABLED=0 $(GO) build -o bin/plugin ./cmd/plugin

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
