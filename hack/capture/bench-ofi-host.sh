#!/usr/bin/env bash
# make bench-ofi, host half: ringcap over libfabric's tcp;ofi_rxm against a single-stream iperf3
# on the same host loopback, in the same run: 64 KiB messages, 4 endpoints, write mode, the
# sender unfilled (--no-fill, as perftest), RUNS runs of DUR seconds each, ringcap and iperf3
# interleaved so that load drift hits both. Prints each run's pair and then
#   ratio ofi-tcp/iperf3=<median of the per-run ratios> (min … max of RUNS runs)
# iperf3's single stream is the TCP ceiling of one loopback connection (goal >= 0.5).
# Then the CPU cost of the adapter on a real provider: RUNS runs each of ringcap and of ofifloor
# (hack/capture/ofifloor: write mode's fi_writedata over the same provider and nothing else, a
# 8 x 4 MiB buffer like ringcap's ring) moving CPU_BYTES, interleaved, each side's user+sys per
# GiB (/usr/bin/time), and
#   ratio ofi-tcp/ofi-floor-tcp SIDE-cpu-per-gib=<median of the per-run ratios> (min … max)
# for SIDE send and recv: what ringcap's adapter and engine add per byte to libfabric's own work.
# Settings: RUNS (5), DUR (5 seconds), MSG (65536), QPS (4), CPU_BYTES (1073741824).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
. hack/env.sh
RUNS=${RUNS:-5} DUR=${DUR:-5} MSG=${MSG:-65536} QPS=${QPS:-4} CPU_BYTES=${CPU_BYTES:-1073741824}
command -v iperf3 >/dev/null || { echo "bench-ofi: iperf3 is missing (make setup)" >&2; exit 1; }
mkdir -p bin
echo "bench-ofi: go build bin/ringcap (cgo)"
CGO_ENABLED=1 go build -o bin/ringcap ./cmd/ringcap
RC=$ROOT/bin/ringcap
OUT=$(mktemp -d)
cc -O2 -Wall -Wextra -Werror -pthread -o "$OUT/ofifloor" hack/capture/ofifloor/ofifloor.c -lfabric
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

# ringcap_cpu: one ringcap capture of CPU_BYTES; prints "SEND-CPU RECV-CPU" in seconds.
ringcap_cpu() {
  ofi_capture "$RC" "$KEY" "$OUT" timed --bytes "$CPU_BYTES" || return 1
  echo "$(awk '{ print $1 + $2 }' "$OUT/send.time") $(awk '{ print $1 + $2 }' "$OUT/recv.time")"
}

# floor_cpu: ofifloor's receiver and writer over tcp;ofi_rxm on the loopback moving CPU_BYTES
# into 8 blocks of ringcap's size; prints "SEND-CPU RECV-CPU" in seconds.
floor_cpu() {
  local port rx; port=$(freeport)
  /usr/bin/time -f '%U %S' -o "$OUT/frecv.time" "$OUT/ofifloor" recv -p 'tcp;ofi_rxm' -d lo -a 127.0.0.1 -l "127.0.0.1:$port" \
    -e "$QPS" -m "$MSG" -b $((4 * MSG * 16)) -n 8 >"$OUT/frecv.log" 2>&1 & rx=$!
  for _ in $(seq 100); do grep -q 'listening on' "$OUT/frecv.log" && break; sleep 0.1; done
  if ! /usr/bin/time -f '%U %S' -o "$OUT/fsend.time" "$OUT/ofifloor" send -p 'tcp;ofi_rxm' -d lo -a 127.0.0.1 -c "127.0.0.1:$port" \
    -B "$CPU_BYTES" >"$OUT/fsend.log" 2>&1 || ! grep -q 'complete=true' "$OUT/fsend.log" || ! wait_for "$rx" 60; then
    stop_pid "$rx"
    echo "bench-ofi: ofifloor failed:" >&2
    cat "$OUT/fsend.log" "$OUT/frecv.log" >&2
    return 1
  fi
  echo "$(awk '{ print $1 + $2 }' "$OUT/fsend.time") $(awk '{ print $1 + $2 }' "$OUT/frecv.time")"
}

# median_range: "MEDIAN (min MIN max MAX of N runs)" of the numbers on stdin.
median_range() {
  sort -g | awk '{ v[NR] = $1 } END { n = NR; m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    printf "%.3f (min %.3f max %.3f of %d runs)", m, v[1], v[n], n }'
}

# quot A B: A / B to four places (nothing when B is 0).
quot() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.4f", a / b }'; }

gib=$(awk -v b="$CPU_BYTES" 'BEGIN { print b / 2^30 }')
sends=() recvs=()
for r in $(seq "$RUNS"); do
  if [ $((r % 2)) = 1 ]; then f=$(floor_cpu) && o=$(ringcap_cpu); else o=$(ringcap_cpu) && f=$(floor_cpu); fi || exit 1
  read -r fs fr <<<"$f"
  read -r os or <<<"$o"
  echo "bench-ofi: cpu run $r CPU-s/GiB send ofi-tcp=$(quot "$os" "$gib") ofi-floor-tcp=$(quot "$fs" "$gib")" \
    "recv ofi-tcp=$(quot "$or" "$gib") ofi-floor-tcp=$(quot "$fr" "$gib")"
  sends+=("$(quot "$os" "$fs")")
  recvs+=("$(quot "$or" "$fr")")
done
echo "ratio ofi-tcp/ofi-floor-tcp send-cpu-per-gib=$(printf '%s\n' "${sends[@]}" | median_range) (ringcap send against ofifloor's writer, $(numfmt --to=iec "$CPU_BYTES")B a run)"
echo "ratio ofi-tcp/ofi-floor-tcp recv-cpu-per-gib=$(printf '%s\n' "${recvs[@]}" | median_range) (ringcap recv into a ring a reader drains against ofifloor's receiver)"
