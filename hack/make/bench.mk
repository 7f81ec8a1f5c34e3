# Benchmarks as data (issue 52): each bench target tees its output into bin/<target>.log and,
# when the run passed, records its figure lines in docs/benchmarks.tsv and regenerates the
# table of docs/benchmarks.md (hack/benchtable). BENCH_RECORD=0 skips recording;
# BENCH_VARIANT=NAME records a run with knobs under "METRIC (NAME)"; BENCH_MACHINE says how
# busy the machine was (e.g. 'host, CPU 1, loaded').
GENERATE += generate-benchtable

BENCH_RECORD ?= 1
BENCH_VARIANT ?=
BENCH_MACHINE ?=
comma := ,

.PHONY: generate-benchtable

## generate-benchtable: docs/benchmarks.md's table of latest figures from the records in docs/benchmarks.tsv (part of generate)
generate-benchtable:
	$(GO) run ./hack/benchtable

# bench-log TARGET: the log a bench target's output is teed into.
bench-log = bin/$(1).log

# bench-record COMMAND,MACHINE,LOG: record LOG's figures as printed by COMMAND on MACHINE.
bench-record = $(if $(filter 1,$(BENCH_RECORD)),$(GO) run ./hack/benchtable record -command '$(1)' -machine '$(or $(BENCH_MACHINE),$(2))' -variant '$(BENCH_VARIANT)' $(3),@echo "bench: not recorded (BENCH_RECORD=$(BENCH_RECORD))")
