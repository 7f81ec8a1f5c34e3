# ringcap — see README.md. Every target works on a fresh Debian bookworm machine after
# `make setup` (which `make demo` and `make test-all` run first).
#
# Each area adds its own targets in hack/make/<area>.mk and appends the tiers that belong
# to the full suite to TEST_ALL (run by `make test-all`, the README's test command).
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
export PATH := /var/tmp/ringcap/bin:/usr/local/go/bin:$(PATH)
export GOFLAGS ?= -buildvcs=false
GO ?= go
TEST_ALL :=
BENCH :=

include $(sort $(wildcard hack/make/*.mk))

# `make` with no target builds: the included files define targets before `all` does.
.DEFAULT_GOAL := all

.PHONY: all help setup build test test-all lint generate verify-gen bench demo demo-ring clean

## all: the default goal (`make` with no target): same as build
all: build

## help: list every target with its one-line description (the first `## target:` line above it)
help:
	@awk '/^## [A-Za-z0-9_.-]+: / { t = $$2; sub(/:$$/, "", t); d = $$0; sub(/^## [^:]+: /, "", d); printf "  %-22s %s\n", t, d }' $(MAKEFILE_LIST)

## setup: install apt packages, Go at /usr/local/go when missing or older than go.mod, and Go tools (idempotent)
setup:
	hack/setup.sh

## build: build every binary into bin/
build:
	$(GO) build -o bin/ ./cmd/...

## test: host unit and integration tests (real SysV IPC, no VM, no API server)
test:
	$(GO) test -count=1 -race ./...

## lint: golangci-lint with .golangci.yml
lint:
	golangci-lint run ./...

## generate: regenerate all generated code and manifests
generate: $(GENERATE)

## verify-gen: fail when committed generated output differs from `make generate`
verify-gen: generate
	@out=$$(git status --porcelain -- api config charts docs/benchmarks.md); \
	if [ -n "$$out" ]; then git diff -- api config charts docs/benchmarks.md | head -50; echo "$$out"; \
	  echo "generated files are out of date: run 'make generate' and commit"; exit 1; fi

## bench: host benchmarks, each printed beside its anchor in the same run
bench: $(BENCH)

## test-all: everything CI runs (the README's test command)
test-all: setup lint verify-gen test $(TEST_ALL)
	@echo "test-all: all tiers passed"

## clean: remove bin/
clean:
	rm -rf bin/

## demo: the main job end to end: a real cluster with its node in the Soft-RoCE VM, data streamed over RoCE
# (ringcap installed with helm, the sample RingCapture applied; see README)
demo: setup
	hack/demo-cluster.sh

## demo-ring: the PSRDADA ring alone on this host (create, write, read+verify, monitor, destroy)
demo-ring: build
	hack/demo.sh
