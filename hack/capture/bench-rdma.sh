#!/usr/bin/env bash
# make bench-rdma: ringcap recv/send against perftest on the same Soft-RoCE link (hack/vm):
# 64 KiB messages, 4 QPs, RUNS runs of DUR seconds per boot of the VM, in BOOTS boots,
# interleaved so that load drift hits every contender alike. Prints
#   ratio send/ib_send_bw=…   ratio write/ib_write_bw=…   ratio perblock/wholering=…
# (goals: >= 0.95, >= 0.95, >= 0.98), each the median of the per-run ratios over every boot,
# then ratio send-1thread/ib_send_bw=… and ratio write-1thread/ib_write_bw=… (ringcap posting
# from one thread, as perftest does; the default posts from one thread per vCPU on rxe),
# ratio send/ib_send_bw_pairs=… and ratio write/ib_write_bw_pairs=… (the anchor there is one
# perftest pair per vCPU at once, the QPs shared out: one perftest process posts from one
# thread, and ib_write_bw's other end idles, so one pair leaves a vCPU to spare), and
# ratio perblock/wholering-concurrent=… (goal >= 0.98: PerBlock and WholeRing streaming at
# once, each with its own ring, set up and started in turn, PerBlock first every other run, so
# that both flows see the same phases of the emulated machine; the ratio of their rates varies
# far less from run to run than that of two runs back to back), and, for each, a
# distribution-free interval for that median (does it settle the goal?). Each contender's
# median rate comes with the vCPUs the guest kept busy over the window
# (busy_vcpus, of `nproc`) and the guest's context switches per second (switches_per_s: under
# TCG each one is emulated, so they show where CPU outside the data path goes), and each
# ratio with the ratios of those (cpu=… switches=…).
# Every rate is taken over the window perftest -D measures (from DUR/4 to DUR - DUR/4 whole
# seconds after the start: no ramp-up, no drain), so like is compared with like; the same
# ratios over ringcap's whole runs follow as `bench-rdma: whole-run …` lines.
# Settings: RUNS (7), BOOTS (1), DUR (6, at least 5: perftest leaves out DUR/4 whole seconds
# at each end), MSG (65536), QPS (4), ACK_TIMEOUT (18, both contenders' local ACK timeout
# exponent), BUSY_POLL (0; 1 runs ringcap's recv and send with --busy-poll, polling for
# completions as perftest does), CONTENDERS (all; a subset, below).
#
# Why boots: under TCG a boot has its own speed profile (where the kernel's data path lands
# among the emulated CPUs, and the host's placement of them), and the median ratio of one
# boot differs from another's by more than its own interval suggests: 8-10 run medians of
# send/ib_send_bw of 0.85 and 1.02 in two boots of the same build. The runs of one boot are
# not independent samples of the ratio, so a settled answer pools several boots.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
. hack/env.sh
VM_DIR=${RINGCAP_VM_DIR:-$RINGCAP_CACHE/vm}
RUNS=${RUNS:-7} BOOTS=${BOOTS:-1}
ALL=(send1 ib_send_bw send ib_send_bw_pairs write1 ib_write_bw write perblock ib_write_bw_pairs concurrent)
# CONTENDERS (default: all of ALL, in that order) runs a subset, e.g. CONTENDERS="write perblock"
# for more runs of the PerBlock/WholeRing comparison in the same time; only the pairs whose two
# sides both ran are reported.
read -ra ORDER <<<"${CONTENDERS:-${ALL[*]}}"
for k in "${ORDER[@]}"; do
  [[ " ${ALL[*]} " == *" $k "* ]] || { echo "bench-rdma: unknown contender $k in CONTENDERS: want some of ${ALL[*]}" >&2; exit 2; }
done
[ "${#ORDER[@]}" -gt 0 ] || { echo "bench-rdma: CONTENDERS names no contender: want some of ${ALL[*]}" >&2; exit 2; }
# The results each contender reports: concurrent runs PerBlock and WholeRing at once, as two
# flows (concurrent_perblock, concurrent_wholering).
RESULTS=()
for k in "${ORDER[@]}"; do
  if [ "$k" = concurrent ]; then RESULTS+=(concurrent_wholering concurrent_perblock); else RESULTS+=("$k"); fi
done
mkdir -p "$VM_DIR/runs"
OUT=$(mktemp -d "$VM_DIR/runs/bench-rdma-$(date +%Y%m%d-%H%M%S)-XXXX")
chmod 0755 "$OUT"
echo "bench-rdma: go build bin/ringcap (cgo)"
CGO_ENABLED=1 go build -o "$OUT/ringcap" ./cmd/ringcap

# Compared pairs: contender, anchor, the name printed, the goal. send and write are ringcap's
# defaults: on rxe one posting thread per vCPU (send --post-threads auto); send1 and write1
# post from one thread, as perftest does; the _pairs anchors are perftest using every vCPU
# (no goal: reported for comparison).
PAIRS=("send ib_send_bw send/ib_send_bw 0.95" "write ib_write_bw write/ib_write_bw 0.95" "perblock write perblock/wholering 0.98"
  "send1 ib_send_bw send-1thread/ib_send_bw -" "write1 ib_write_bw write-1thread/ib_write_bw -"
  "send ib_send_bw_pairs send/ib_send_bw_pairs -" "write ib_write_bw_pairs write/ib_write_bw_pairs -"
  "concurrent_perblock concurrent_wholering perblock/wholering-concurrent 0.98")
ran() { [[ " ${RESULTS[*]} " == *" $1 "* ]]; }
kept=()
for p in "${PAIRS[@]}"; do
  read -r a b _ <<<"$p"
  ! ran "$a" || ! ran "$b" || kept+=("$p")
done
PAIRS=("${kept[@]}")
# The rates are over perftest's measuring window (from DUR/4 to DUR - DUR/4 seconds into the
# run; see window() in the guest half). Each ringcap contender's whole-run rates come as
# NAME.whole too; the whole-run pairs set them against the same anchors (perftest's window:
# perftest has no other figure; ringcap's whole runs where the anchor is ringcap).
WHOLE=() WHOLE_PAIRS=() CPU=()  # CPU: every contender's NAME.cpu and NAME.cs
for p in "${PAIRS[@]}"; do
  read -r a b name _ <<<"$p"
  [[ $b == ib_* ]] || b=$b.whole
  WHOLE_PAIRS+=("$a.whole $b $name")
done
for k in "${RESULTS[@]}"; do
  [[ $k == ib_* ]] || WHOLE+=("$k.whole")
  CPU+=("$k.cpu" "$k.cs")
done
declare -A RES # contender -> the rates of every run so far, in run order (pairs line up by position)

median() { # values...
  printf '%s\n' "$@" | sort -g | awk '{ x[NR] = $1 } END {
    if (NR % 2) print x[(NR + 1) / 2]; else printf "%.4f\n", (x[NR / 2] + x[NR / 2 + 1]) / 2 }'
}
# The ratios are medians of per-run ratios: the two sides of a pair ran back to back in the
# same boot, so slow phases of the emulated machine (which move every contender alike, by up
# to a factor of two between phases) cancel within a pair instead of landing on one side.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.4f", a / b; else print "nan" }'; }
ratios() { # A B RESULTS: the per-run ratios A_i / B_i, one per line
  local -n res=$3
  local i as bs
  read -ra as <<<"${res[$1]}"; read -ra bs <<<"${res[$2]}"
  for i in "${!as[@]}"; do ratio "${as[i]}" "${bs[i]}"; echo; done
}
# interval A B RESULTS: a distribution-free interval for the median of the per-run ratios
# A_i/B_i: the k-th smallest and k-th largest, k the largest with P(Binomial(n, 1/2) < k) <=
# 2.5 % (coverage 1 - 2 P(Binomial < k): at least 95 % from 6 runs on; k = 1, the whole range,
# below 9 runs). It says whether a goal is met, missed, or not resolved by this many runs.
interval() {
  ratios "$1" "$2" "$3" | sort -g | awk '{ x[NR] = $1 } END {
    n = NR; k = 1; p = 1; for (j = 0; j < n; j++) p /= 2; cdf = p
    for (j = 1; j < n; j++) { p = p * (n - j + 1) / j; if (cdf + p > 0.025) break; cdf += p; k = j + 1 }
    printf "[%.3f, %.3f] (%.1f %% coverage, %d runs)", x[k], x[n - k + 1], 100 * (1 - 2 * cdf), n }'
}
pmedian() { # A B RESULTS: the median over runs of A_i / B_i
  local rs; read -ra rs <<<"$(ratios "$1" "$2" "$3" | tr '\n' ' ')"
  median "${rs[@]}" | awk '{ printf "%.3f", $1 }'
}

rc=0
for boot in $(seq "$BOOTS"); do
  SHARE=$OUT/boot-$boot
  mkdir -p "$SHARE/bin" && chmod 0755 "$SHARE"
  cp "$OUT/ringcap" "$SHARE/bin/ringcap"
  {
    echo "export RUNS=$RUNS DUR=${DUR:-6} MSG=${MSG:-65536} QPS=${QPS:-4} ACK_TIMEOUT=${ACK_TIMEOUT:-18} BUSY_POLL=${BUSY_POLL:-0} CONTENDERS='${ORDER[*]}'"
    cat hack/capture/bench-rdma-guest.sh
  } >"$SHARE/bench-rdma-guest.sh"
  echo "bench-rdma: boot $boot of $BOOTS ($RUNS runs)"
  RINGCAP_VM_SHARE=$SHARE hack/vm/run.sh "$SHARE/bench-rdma-guest.sh" | tee "$SHARE/bench.log" || { rc=$?; break; }
  declare -A B=()
  while read -r _ _ k vals; do
    B[$k]=" $vals"
  done < <(tr -d '\r' <"$SHARE/bench.log" | grep '^bench-rdma: runs ')
  for k in "${RESULTS[@]}" "${WHOLE[@]}" "${CPU[@]}"; do
    n=$(wc -w <<<"${B[$k]:-}")
    [ "$n" = "$RUNS" ] || { echo "bench-rdma: boot $boot reported $n runs of $k, want $RUNS" >&2; rc=1; break 2; }
    RES[$k]+=${B[$k]}
  done
  line="bench-rdma: boot $boot medians of per-run ratios:"
  for p in "${PAIRS[@]}"; do
    read -r a b name _ <<<"$p"
    line+=" $name=$(pmedian "$a" "$b" B)"
  done
  echo "$line" | tee -a "$OUT/boots.log"
done

echo "---- bench-rdma (logs: $OUT/boot-*/bench.log)"
[ "$rc" = 0 ] || { echo "bench-rdma: failed (rc=$rc)"; exit "$rc"; }
cat "$OUT/boots.log"
for k in "${RESULTS[@]}" "${WHOLE[@]}"; do
  # shellcheck disable=SC2086
  busy=${RES[$k.cpu]:+" busy_vcpus=$(median ${RES[$k.cpu]})"}
  # shellcheck disable=SC2086
  busy+=${RES[$k.cs]:+" switches_per_s=$(median ${RES[$k.cs]})"}
  # shellcheck disable=SC2086
  echo "bench-rdma: median $k gbps=$(median ${RES[$k]})$busy runs=[${RES[$k]# }]"
done
for p in "${PAIRS[@]}"; do
  read -r a b name _ <<<"$p"
  rs=$(ratios "$a" "$b" RES | tr '\n' ' ')
  echo "bench-rdma: per-run $name ratios=[${rs% }]"
done
for p in "${WHOLE_PAIRS[@]}"; do
  read -r a b name <<<"$p"
  echo "bench-rdma: whole-run $name=$(pmedian "$a" "$b" RES) (ringcap's whole run, ramp-up and drain included)"
done
for p in "${PAIRS[@]}"; do
  read -r a b name _ <<<"$p"
  echo "ratio $name=$(pmedian "$a" "$b" RES)"
done
for p in "${PAIRS[@]}"; do
  read -r a b name _ <<<"$p"
  echo "bench-rdma: busy vCPUs $name cpu=$(pmedian "$a.cpu" "$b.cpu" RES) (median per-run ratio of the vCPUs each side kept busy over the window)"
done
for p in "${PAIRS[@]}"; do
  read -r a b name _ <<<"$p"
  echo "bench-rdma: context switches $name switches=$(pmedian "$a.cs" "$b.cs" RES) (median per-run ratio of the guest's context switches per second over the window)"
done
for p in "${PAIRS[@]}"; do
  read -r a b name goal <<<"$p"
  echo "bench-rdma: interval $name $(interval "$a" "$b" RES) goal $goal ($BOOTS boots x $RUNS runs)"
done
