#!/usr/bin/env bash
# make bench-ofi, VM half: ringcap over libfabric's verbs;ofi_rxm against ringcap over raw verbs
# on the same Soft-RoCE link (hack/vm), in one boot: 64 KiB messages, 4 endpoints / queue pairs,
# write mode, the sender unfilled, RUNS runs of DUR seconds each, alternated (guest half:
# bench-ofi-vm-guest.sh). Prints each run's pair and then
#   ratio ofi-verbs/verbs=<median of the per-run ratios> [lo, hi]
# with [lo, hi] the smallest and largest per-run ratio (goal >= 0.90). Under TCG the emulator's
# speed swings 1.5-2x between phases of a boot: alternation lets both contenders see them alike.
# Settings: RUNS (5), DUR (6 seconds), MSG (65536), QPS (4).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
. hack/env.sh
VM_DIR=${RINGCAP_VM_DIR:-$RINGCAP_CACHE/vm}
RUNS=${RUNS:-5}
mkdir -p "$VM_DIR/runs"
SHARE=$(mktemp -d "$VM_DIR/runs/bench-ofi-$(date +%Y%m%d-%H%M%S)-XXXX")
chmod 0755 "$SHARE"
mkdir -p "$SHARE/bin"
echo "bench-ofi: go build ringcap (cgo) for the VM"
CGO_ENABLED=1 go build -o "$SHARE/bin/ringcap" ./cmd/ringcap
{
  echo "export RUNS=$RUNS DUR=${DUR:-6} MSG=${MSG:-65536} QPS=${QPS:-4}"
  cat hack/capture/bench-ofi-vm-guest.sh
} >"$SHARE/bench-ofi-vm-guest.sh"
RINGCAP_VM_SHARE=$SHARE hack/vm/run.sh "$SHARE/bench-ofi-vm-guest.sh" | tee "$SHARE/bench.log"
tr -d '\r' <"$SHARE/bench.log" | sed -n 's/^bench-ofi-vm: run [0-9]* verbs=\([0-9.]*\) ofi-verbs=\([0-9.]*\)$/\1 \2/p' >"$SHARE/pairs"
n=$(wc -l <"$SHARE/pairs")
[ "$n" = "$RUNS" ] || { echo "bench-ofi: $n of $RUNS runs in the VM completed (see $SHARE/bench.log)" >&2; exit 1; }
awk '{ printf "%.4f\n", $2 / $1 }' "$SHARE/pairs" | sort -n | awk -v n="$n" '{ v[NR] = $1 } END {
  m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  printf "ratio ofi-verbs/verbs=%.3f [%.3f, %.3f] (median, min and max of %d alternated runs in one boot; 64 KiB messages, 4 endpoints, write mode, rxe)\n", m, v[1], v[n], n }'
