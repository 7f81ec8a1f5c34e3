# ringcap recv/send (issue 4): host tests run with `make test`; the Soft-RoCE end-to-end tests
# run in `make test-vm` (pkg/capture is listed in test/vm/packages.txt).
.PHONY: bench-rdma fuzz-capture

## bench-rdma: ringcap send/write vs ib_send_bw/ib_write_bw and PerBlock vs WholeRing, in the VM
bench-rdma: vm-image
	hack/capture/bench-rdma.sh

## fuzz-capture: fuzz the handshake decoder for FUZZTIME (default 60s); new finds land in the corpus
FUZZTIME ?= 60s
fuzz-capture:
	$(GO) test ./pkg/capture/wire -run '^$$' -fuzz FuzzReadMessage -fuzztime $(FUZZTIME)
