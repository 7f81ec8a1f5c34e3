# ringcap recv/send (issue 4): host tests run with `make test`; the Soft-RoCE end-to-end tests
# run in `make test-vm` (pkg/capture is listed in test/vm/packages.txt).
.PHONY: bench-rdma fuzz-capture bench-headroom bench-headroom-ab bench-ofi bench-scrape

## bench-rdma: ringcap send/write vs ib_send_bw/ib_write_bw and PerBlock vs WholeRing, in the VM
bench-rdma: vm-image
	@mkdir -p bin
	hack/capture/bench-rdma.sh | tee $(call bench-log,bench-rdma)
	$(call bench-record,make bench-rdma,VM,$(call bench-log,bench-rdma))

## bench-ofi: ringcap over libfabric: tcp;ofi_rxm vs a single-stream iperf3 on the host loopback (ratio ofi-tcp/iperf3) and its CPU per GiB vs a C libfabric floor (ratio ofi-tcp/ofi-floor-tcp), then verbs;ofi_rxm vs raw verbs and vs a C libfabric floor (hack/capture/ofifloor) on one rxe link in the Soft-RoCE VM (ratios ofi-verbs/verbs, ofi-floor/verbs, ofi-verbs/ofi-floor)
bench-ofi: vm-image
	@mkdir -p bin
	hack/capture/bench-ofi-host.sh | tee $(call bench-log,bench-ofi-host)
	$(call bench-record,hack/capture/bench-ofi-host.sh,host,$(call bench-log,bench-ofi-host))
	hack/capture/bench-ofi-vm.sh | tee $(call bench-log,bench-ofi-vm)
	$(call bench-record,hack/capture/bench-ofi-vm.sh,VM,$(call bench-log,bench-ofi-vm))

## fuzz-capture: fuzz the handshake decoder (framed, and each message type) for FUZZTIME (default 60s); new finds land in the corpus
FUZZTIME ?= 60s
fuzz-capture:
	$(GO) test ./pkg/capture/wire -run '^$$' -fuzz FuzzReadMessage -fuzztime $(FUZZTIME)
	$(GO) test ./pkg/capture/wire -run '^$$' -fuzz FuzzDecode -fuzztime $(FUZZTIME)

## bench-headroom-ab: the headroom benchmarks of OLD (a git revision) and this tree alternating in one run (ROUNDS, default 5): each figure's CPU time per op new/old; host only
bench-headroom-ab:
	@mkdir -p bin
	OLD=$(OLD) ROUNDS=$(or $(ROUNDS),5) HEADROOM_CPU=$(HEADROOM_CPU) hack/headroom-ab.sh | tee $(call bench-log,bench-headroom-ab).rounds
	grep '^ratio ' $(call bench-log,bench-headroom-ab).rounds > $(call bench-log,bench-headroom-ab) # the rounds' own figures are not records
	$(call bench-record,make bench-headroom-ab OLD=$(OLD),host$(comma) CPU $(HEADROOM_CPU),$(call bench-log,bench-headroom-ab))

## bench-headroom: what one pinned core of the receive and send engines sustains with a fabric that costs nothing (pkg/capture/benchfabric), as headroom over a 400 Gb/s link, and the ring handoff beside its semop floor; host only
# Pinned to HEADROOM_CPU, once with each GOMAXPROCS of HEADROOM_PROCS: the engine, the ring's reader and the
# test peer share that core (with GOMAXPROCS=1 a blocking semop holds the only P until sysmon takes it back).
# Pass HEADROOM_RUN='TestHeadroom/recv-send' for one group; to profile, HEADROOM_PROCS=2 HEADROOM_FLAGS='-test.cpuprofile cpu.out'.
HEADROOM_CPU ?= 1
HEADROOM_RUN ?= TestHeadroom
HEADROOM_FLAGS ?=
HEADROOM_PROCS ?= 1 2
bench-headroom:
	@mkdir -p bin
	$(GO) test -c -tags headroom -o bin/headroom.test ./pkg/capture/benchfabric
	for p in $(HEADROOM_PROCS); do \
	  GOMAXPROCS=$$p taskset -c $(HEADROOM_CPU) bin/headroom.test -test.run '$(HEADROOM_RUN)' -test.benchtime 1s -test.timeout 20m $(HEADROOM_FLAGS); \
	done | tee $(call bench-log,bench-headroom)
	$(GO) test -c -o bin/dada.test ./pkg/dada
	cd pkg/dada && taskset -c $(HEADROOM_CPU) ../../bin/dada.test -test.run '^$$' -test.bench BenchmarkHandoffFloor -test.benchtime 1x | tee -a ../../$(call bench-log,bench-headroom)
	$(call bench-record,make bench-headroom,host$(comma) CPU $(HEADROOM_CPU),$(call bench-log,bench-headroom))

BENCH += bench-scrape

## bench-scrape: the CPU cost of one full scrape of a capture's /metrics (its registry, the ring watcher on a real ring with 2 reader slots, an mlx5 port's link counters from a sysfs tree in a temp dir) as the share of one core at a 1 s scrape (goal ≤ 0.5 %); host only, pinned to SCRAPE_CPU
SCRAPE_CPU ?= 0
bench-scrape:
	@mkdir -p bin
	$(GO) test -c -o bin/capture.test ./pkg/capture
	cd pkg/capture && taskset -c $(SCRAPE_CPU) ../../bin/capture.test -test.run '^$$' -test.bench '^BenchmarkScrape$$' -test.benchtime 1x | tee ../../$(call bench-log,bench-scrape)
	$(call bench-record,make bench-scrape,host$(comma) CPU $(SCRAPE_CPU),$(call bench-log,bench-scrape))
