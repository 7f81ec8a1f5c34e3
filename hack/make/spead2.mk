# spead2 interoperability (issue 53): `ringcap recv --protocol spead` against SARAO's spead2
# tools, built from a spead2 v3 checkout (SPEAD2_SRC, e.g. tag v3.13.0 of
# github.com/ska-sa/spead2) into $(RINGCAP_CACHE)/spead2. Manual, not in CI.

.PHONY: interop-spead2 bench-spead2

## interop-spead2: spead2_send into spead2_recv and into ringcap recv: same bytes, no loss (SPEAD2_SRC; manual)
interop-spead2:
	hack/spead2-interop.sh $(SPEAD2_SRC)

## bench-spead2: ringcap recv vs spead2_recv: highest loss-free rate and CPU s/GiB (SPEAD2_SRC; manual)
# ROUNDS, HEAPS, CPU_HEAPS, RATES and CPU_RATE size it, VETH=1 streams over a veth pair, RECV_FLAGS
# go to ringcap recv (hack/spead2-bench.sh); it records nothing.
bench-spead2:
	hack/spead2-bench.sh $(SPEAD2_SRC)
