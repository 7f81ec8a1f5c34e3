# Packet ingest (issue 53): SPEAD and VDIF over UDP into a ring. Its unit and loopback tests
# run in `make test`; bench-ingest is its speed, each figure beside its anchor in the same run.
BENCH += bench-ingest

.PHONY: bench-ingest

# ROUNDS: rounds of each part (default: BenchmarkPlaceFloor and BenchmarkPipelineFloor 7,
# ratebench 5). The receivers (and the placing benchmarks) run on INGEST_RECV_CPU, the sender
# and the ring's reader on INGEST_SEND_CPU; INGEST_FLAGS go to hack/ingest/ratebench (e.g.
# -duration 3s -cpu-rate 512 -floor-wait epoll).
INGEST_RECV_CPU ?= 1
INGEST_SEND_CPU ?= 0
INGEST_FLAGS ?=
INGEST_FLOOR = $(or $(RINGCAP_CACHE),/var/tmp/ringcap)/ingest/recvmmsg-floor
# The placing benchmarks are pinned only where there are two CPUs (INGEST_PIN= unpins them;
# ratebench decides for itself).
INGEST_PIN = $(shell [ "$$(nproc)" -ge 2 ] && echo taskset -c $(INGEST_RECV_CPU))

## bench-ingest: UDP packet ingest on the host: placing 8 KiB packets into ring blocks against a bare copy (ratio place/memcpy-floor, goal ≤ 1.1; the whole SPEAD pipeline: pipeline/memcpy-floor), then ringcap recv --protocol spead against a C recvmmsg receiver on the same loopback stream: highest loss-free rate (ratio ringcap/recvmmsg-floor, goal ≥ 0.9) and CPU per GiB; ROUNDS=N
bench-ingest:
	@mkdir -p bin $(dir $(INGEST_FLOOR))
	gcc -O2 -Wall -Wextra -o $(INGEST_FLOOR) hack/ingest/recvmmsg-floor.c
	$(GO) build -o bin/ringcap ./cmd/ringcap
	$(GO) build -o bin/ratebench ./hack/ingest/ratebench
	$(GO) test -c -o bin/assemble.test ./pkg/ingest/assemble
	$(GO) test -c -o bin/stream.test ./pkg/ingest/stream
	cd pkg/ingest/assemble && RINGCAP_BENCH_ROUNDS=$(ROUNDS) $(INGEST_PIN) ../../../bin/assemble.test -test.run '^$$' -test.bench '^BenchmarkPlaceFloor$$' -test.benchtime 1x | tee ../../../$(call bench-log,bench-ingest)
	cd pkg/ingest/stream && RINGCAP_BENCH_ROUNDS=$(ROUNDS) $(INGEST_PIN) ../../../bin/stream.test -test.run '^$$' -test.bench '^BenchmarkPipelineFloor$$' -test.benchtime 1x | tee -a ../../../$(call bench-log,bench-ingest)
	bin/ratebench -ringcap bin/ringcap -floor $(INGEST_FLOOR) $(if $(ROUNDS),-rounds $(ROUNDS)) -recv-cpu $(INGEST_RECV_CPU) -send-cpu $(INGEST_SEND_CPU) $(INGEST_FLAGS) | tee -a $(call bench-log,bench-ingest)
	$(call bench-record,make bench-ingest$(if $(ROUNDS), ROUNDS=$(ROUNDS))$(if $(INGEST_FLAGS), INGEST_FLAGS="$(INGEST_FLAGS)"),host$(comma) receiver CPU $(INGEST_RECV_CPU),$(call bench-log,bench-ingest))
