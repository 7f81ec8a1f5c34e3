#!/usr/bin/env bash
# make bench-ofi, host half: ringcap over libfabric's tcp;ofi_rxm against a single-stream iperf3
# on the same host loopback, in the same run: 64 KiB messages, 4 endpoints, write mode, the
# sender unfilled (--no-fill, as perftest), RUNS runs of DUR seconds each, ringcap and iperf3
# interleaved so that load drift hits both. Prints each run's pair and then
#   ratio ofi-tcp/iperf3=<median of the per-run ratios> (min … max of RUNS runs)
# iperf3's single stream is the TCP ceiling of one loopback connection (goal >= 0.5).
# Settings: RUNS (5), DUR (5 seconds), MSG (65536), QPS (4).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
. hack/env.sh
RUNS=${RUNS:-5} DUR=${DUR:-5} MSG=${MSG:-65536} QPS=${QPS:-4}
command -v iperf3 >/dev/null || { echo "bench-ofi: iperf3 is missing (make setup)" >&2; exit 1; }
mkdir -p bin
echo "bench-ofi: go build bin/ringcap (cgo)"
CGO_ENABLED=1 go build -o bin/ringcap ./cmd/ringcap
RC=$ROOT/bin/ringcap
OUT=$(mktemp -d)
KEY=$(printf '%x' $(( (0x5a00 + $$ % 0x100) << 16 | 0xb0 )))
. hack/capture/ofi-host-lib.sh
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  "$RC" ring destroy -k "$KEY" >/dev/null 2>&1 || true
  rm -rf "$OUT"
}
trap cleanup EXIT

# iperf3_gbps: one single-stream iperf3 run of DUR seconds over loopback, in Gb/s.
iperf3_gbps() {
  local port; port=$(freeport)
  iperf3 -s -1 -B 127.0.0.1 -p "$port" >/dev/null 2>&1 & pids+=($!)
  sleep 0.3
  iperf3 -c 127.0.0.1 -p "$port" -t "$DUR" -J | jq -r '.end.sum_received.bits_per_second / 1e9 * 1000 | round / 1000'
  wait
}

# ringcap_gbps: one ringcap recv/send over tcp;ofi_rxm of DUR seconds, in Gb/s as the sender
# reports it.
ringcap_gbps() {
  ofi_capture "$RC" "$KEY" "$OUT" "" --duration "${DUR}s" || return 1
  sed -n 's/.* gbps=\([0-9.]*\) .*/\1/p' "$OUT/send.out"
}

ratios=()
for r in $(seq "$RUNS"); do
  if [ $((r % 2)) = 1 ]; then i=$(iperf3_gbps); o=$(ringcap_gbps); else o=$(ringcap_gbps); i=$(iperf3_gbps); fi
  ratio=$(awk -v o="$o" -v i="$i" 'BEGIN { printf "%.3f", o / i }')
  echo "bench-ofi: run $r ofi-tcp=${o} Gb/s iperf3=${i} Gb/s ratio=$ratio"
  ratios+=("$ratio")
done
printf '%s\n' "${ratios[@]}" | sort -n | awk -v n="$RUNS" '{ v[NR] = $1 } END {
  m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  printf "ratio ofi-tcp/iperf3=%.3f (min %.3f max %.3f of %d runs; 64 KiB messages, 4 endpoints, write mode)\n", m, v[1], v[n], n }'
