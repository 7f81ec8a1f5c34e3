# PSRDADA ring (issue 2): pkg/dada, pkg/pattern, `ringcap ring ...` and the ring demo.
# The unit and multi-process tests (real SysV IPC, hugepages, crash tests, the header fuzz
# corpus) run in `make test`.

FUZZTIME ?= 30s

TEST_ALL += test-demo
BENCH += bench-dada

.PHONY: test-demo bench-dada fuzz-dada interop-dada

## test-demo: run the ring demo (hack/demo.sh) on a small stream; fails on any mismatch or leftover
# Uses a pid-derived key (never dada, which belongs to users and `make demo`).
test-demo:
	DEMO_KEY=$$(printf '%x' $$(( (0x3000 + $$$$ % 64 * 0x100) << 16 | 0xc000 ))) DEMO_BYTES=$$((64 << 20)) hack/demo.sh

## bench-dada: ring throughput, per-block handoff and `ring write -f` vs dd, each beside its anchor
# Ring throughput writer->reader (1 and 2 readers, 1 MiB and 16 MiB blocks) and
# the per-block handoff cost, each beside a plain copy measured in the same run, and
# `ring write -f` of a tmpfs file beside dd reading it (ratio write-file/dd-read)
bench-dada:
	@mkdir -p bin
	$(GO) test -count=1 -run '^$$' -bench . -benchtime 2s ./pkg/dada ./pkg/pattern ./cmd/ringcap | tee $(call bench-log,bench-dada)
	$(call bench-record,make bench-dada,host,$(call bench-log,bench-dada))

## fuzz-dada: fuzz the ASCII header parser for FUZZTIME (new failures land in pkg/dada/testdata/fuzz)
fuzz-dada:
	$(GO) test -run '^$$' -fuzz FuzzParseHeader -fuzztime $(FUZZTIME) ./pkg/dada

## interop-dada: check rings against real PSRDADA tools built from PSRDADA_SRC (manual, not in CI)
# PSRDADA_SRC is a checkout of github.com/mirror-psrdada/mirror-psrdada-code; not in CI (no access to its sources).
interop-dada:
	hack/dada-interop.sh $(PSRDADA_SRC)
