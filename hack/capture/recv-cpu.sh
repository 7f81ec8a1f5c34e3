#!/usr/bin/env bash
# The receiver's own CPU per GiB on Soft-RoCE, an old build against this one in the same boot
# (issue 38): ringcap recv (4 QPs, 8 x 4 MiB ring, 64 KiB messages, no --busy-poll) takes
# BYTES from ringcap send, a `ring read -s` draining the ring; the recv process's user+sys
# (bash `times` of its parent) per GiB, both modes, ROUNDS rounds, old and new alternating which
# goes first. Each receiver is fed by the sender of its own build (their handshake versions may
# differ). Beside them, the floor: perftest's receiving end on the same link (ib_send_bw's
# server, ib_write_bw's passive server; 4 QPs, 64 KiB messages, BYTES in all, completion
# events where perftest offers them: ib_send_bw), timed the same way, taking the first, second and third place in turn. On rxe the
# data is placed by the kernel, and what of that lands on the receiving process lands on any
# receiver. Prints one `recvcpu …` line per run, each contender's CPU-s/GiB
# (`recv-cpu-per-gib MODE BIN=…`) and `ratio recv-cpu-per-gib MODE new/old=…`, `new/perftest=…`
# and `old/perftest=…`, each the median of the per-round values with their range. Settings:
# OLD (commit, required), NEW (commit; default the working tree), ROUNDS (3), BYTES (536870912,
# a multiple of 256 KiB), PROFILE (1: the new receiver's Go CPU profiles, one per run, in the
# run's share directory, for `go tool pprof $SHARE/ringcap-new FILE`), NEW_ENV (VAR=VALUE words
# in the new receiver's environment, e.g. GOMAXPROCS=1; with NEW=OLD, that setting's effect),
# SOFTIRQ (1: one more run of each receiver under perf record, for the share of its CPU spent in
# softirq, the kernel's network and rxe work, which this kernel, without IRQ time accounting,
# charges to whatever process is running, a busy receiver more than a sleeping one; prints
# `recv-softirq-share MODE BIN=…` and `ratio recv-own-cpu-per-gib MODE A/B=…`, the per-round
# ratios of CPU less that share: the receiver's own work, which a NIC does not take over). Under TCG the receiver's CPU tracks the run's length (it sleeps and
# wakes per completion), and the link's rate swings from run to run.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
. hack/env.sh
: "${OLD:?OLD=<commit> to compare with}"
ROUNDS=${ROUNDS:-3} BYTES=${BYTES:-536870912}
# perftest moves BYTES as iterations of 64 KiB on each of 4 QPs.
if [ "$BYTES" -le 0 ] || [ $((BYTES % 262144)) -ne 0 ]; then
  echo "recv-cpu: BYTES=$BYTES is not a positive multiple of 262144 (64 KiB on each of 4 QPs)" >&2
  exit 2
fi
VM_DIR=${RINGCAP_VM_DIR:-$RINGCAP_CACHE/vm}
SHARE=$VM_DIR/runs/recv-cpu-$(date +%Y%m%d-%H%M%S)-$$
SRC=$(mktemp -d) SRCNEW=$(mktemp -d)
trap 'rm -rf "$SRC" "$SRCNEW"' EXIT
mkdir -p "$SHARE"
git archive "$OLD" | tar -x -C "$SRC"
(cd "$SRC" && go build -o "$SHARE/ringcap-old" ./cmd/ringcap)
if [ -n "${NEW:-}" ]; then
  git archive "$NEW" | tar -x -C "$SRCNEW"
  (cd "$SRCNEW" && go build -o "$SHARE/ringcap-new" ./cmd/ringcap)
else
  go build -o "$SHARE/ringcap-new" ./cmd/ringcap
fi
if [ "${SOFTIRQ:-0}" = 1 ]; then
  perf=$(command -v perf) || { echo "recv-cpu: SOFTIRQ=1 needs perf on the host (Debian's linux-perf)" >&2; exit 1; }
  mkdir -p "$SHARE/perf/lib"
  cp "$perf" "$SHARE/perf/perf"
  ldd "$perf" | awk '$3 ~ /^\// { print $3 }' | xargs -r cp -t "$SHARE/perf/lib"
fi
sed -e "s/@ROUNDS@/$ROUNDS/" -e "s/@BYTES@/$BYTES/" -e "s/@PROFILE@/${PROFILE:-0}/" -e "s/@SOFTIRQ@/${SOFTIRQ:-0}/" \
  -e "s|@NEW_ENV@|${NEW_ENV:-}|" hack/capture/recv-cpu-guest.sh > "$SHARE/guest.sh"
chmod +x "$SHARE/guest.sh"
# A failed perftest run leaves the others' figures: they are still summarised, then the
# guest's status is returned.
rc=0
RINGCAP_VM_SHARE=$SHARE hack/vm/run.sh "$SHARE/guest.sh" | tee "$SHARE/run.log" || rc=$?
# CPU seconds per GiB of each run: "ROUND MODE BIN CPU".
runs=$({ grep -a '^recvcpu ' "$SHARE/run.log" || true; } | awk -v bytes="$BYTES" '
  function secs(s,  m) { m = s; sub(/m.*/, "", m); sub(/^[0-9]+m/, "", s); sub(/s$/, "", s); return m * 60 + s }
  { for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    print f["round"], f["mode"], f["bin"], (secs(f["user"]) + secs(f["sys"])) / (bytes / 2^30) }')
# median_range: the median (the lower one of an even count), least and greatest of the numbers
# on stdin, and their count: "M LO HI N" (nothing when there are none).
median_range() {
  sort -g | awk '{ x[++n] = $1 } END { if (n) printf "%.2f %.2f %.2f %d\n", x[int((n + 1) / 2)], x[1], x[n], n }'
}
# ratios MODE A B: the per-round ratios of A's CPU to B's in MODE, one a line.
# shellcheck disable=SC2317 # called through pair_ratios
ratios() {
  echo "$runs" | awk -v m="$1" -v a="$2" -v b="$3" '$2 == m { c[$1 SUBSEP $3] = $4; r[$1] }
    END { for (k in r) if (((k SUBSEP a) in c) && ((k SUBSEP b) in c) && c[k SUBSEP b] > 0) print c[k SUBSEP a] / c[k SUBSEP b] }'
}
# pair_ratios NAME RATIOS MODE: `ratio NAME MODE A/B=…` for each pair of contenders, the
# summary of what RATIOS MODE A B prints.
pair_ratios() {
  local pair a b m lo hi n
  for pair in "new old" "new perftest" "old perftest"; do
    read -r a b <<<"$pair"
    read -r m lo hi n <<<"$("$2" "$3" "$a" "$b" | median_range)"
    [ -z "${m:-}" ] || echo "ratio $1 $3 $a/$b=$m [$lo, $hi] ($n rounds)"
  done
}
for mode in send write; do
  for bin in new old perftest; do
    read -r m lo hi n <<<"$(echo "$runs" | awk -v m="$mode" -v b="$bin" '$2 == m && $3 == b { print $4 }' | median_range)"
    [ -z "${m:-}" ] || echo "recv-cpu-per-gib $mode $bin=$m [$lo, $hi] CPU-s/GiB ($n runs)"
  done
  pair_ratios recv-cpu-per-gib ratios "$mode"
done
# SOFTIRQ=1: each receiver's softirq share ("MODE BIN SHARE"), and the ratios of CPU less it.
shares=$({ grep -a '^recvsoftirq ' "$SHARE/run.log" || true; } | tr -d '\r' | awk '
  { for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }; print f["mode"], f["bin"], f["share"] }')
# own_ratios MODE A B: the per-round ratios of A's CPU less its softirq share to B's.
# shellcheck disable=SC2317 # called through pair_ratios
own_ratios() {
  local sa sb
  sa=$(echo "$shares" | awk -v m="$1" -v b="$2" '$1 == m && $2 == b { print $3 }')
  sb=$(echo "$shares" | awk -v m="$1" -v b="$3" '$1 == m && $2 == b { print $3 }')
  [ -n "$sa" ] && [ -n "$sb" ] || return 0
  ratios "$@" | awk -v sa="$sa" -v sb="$sb" 'sb < 1 { print $1 * (1 - sa) / (1 - sb) }'
}
if [ -n "$shares" ]; then
  echo "$shares" | while read -r mode bin share; do echo "recv-softirq-share $mode $bin=$share"; done
  for mode in send write; do pair_ratios recv-own-cpu-per-gib own_ratios "$mode"; done
fi
[ "${PROFILE:-0}" != 1 ] || echo "recv-cpu: the new receiver's CPU profiles: $(ls "$SHARE"/*.pprof 2>/dev/null | tr '\n' ' ')(go tool pprof $SHARE/ringcap-new FILE)"
exit "$rc"
