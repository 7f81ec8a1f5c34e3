#!/usr/bin/env bash
# CPU per GiB of ringcap over libfabric's verbs;ofi_rxm against ringcap over raw verbs, receiver
# and sender, on the same Soft-RoCE link in one boot (hack/vm; wrap in `flock /work/vm.lock`).
# Each run moves BYTES (write mode by default, 64 KiB messages, 4 endpoints / queue pairs, the
# sender unfilled, a `ring read -s` draining a 16 x 1 MiB ring), transports alternated, ROUNDS
# rounds (guest half: ofi-cpu-guest.sh). CPU is each process's user+sys time, which the
# emulator's swings in link speed move far less than throughput. Prints each run, then per mode
#   ofi-cpu MODE SIDE: verbs=<CPU-s/GiB> ofi=<CPU-s/GiB> (medians; ofi is verbs;ofi_rxm)
#   ratio ofi/verbs SIDE-cpu-per-gib MODE=<median of the per-round ratios> [min, max]
# Settings: ROUNDS (5), BYTES (134217728), MODES ("write"; "write send" for both), MSG, QPS,
# PERF=1 (one more run of each under perf record; reports in the share's perf-*.txt), OLD=<commit>
# (its ringcap runs as a third contender, ofi-old, and its ratios are printed too).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
. hack/env.sh
VM_DIR=${RINGCAP_VM_DIR:-$RINGCAP_CACHE/vm}
ROUNDS=${ROUNDS:-5} BYTES=${BYTES:-134217728} MODES=${MODES:-write} PERF=${PERF:-0}
mkdir -p "$VM_DIR/runs"
SHARE=$(mktemp -d "$VM_DIR/runs/ofi-cpu-$(date +%Y%m%d-%H%M%S)-XXXX")
chmod 0755 "$SHARE"
mkdir -p "$SHARE/bin"
echo "ofi-cpu: go build ringcap (cgo) for the VM"
CGO_ENABLED=1 go build -o "$SHARE/bin/ringcap" ./cmd/ringcap
if [ -n "${OLD:-}" ]; then
  SRC=$(mktemp -d)
  trap 'rm -rf "$SRC"' EXIT
  git archive "$OLD" | tar -x -C "$SRC"
  (cd "$SRC" && CGO_ENABLED=1 go build -o "$SHARE/bin/ringcap-old" ./cmd/ringcap)
fi
if [ "$PERF" = 1 ]; then
  perf=$(command -v perf) || { echo "ofi-cpu: PERF=1 needs perf on the host (Debian's linux-perf)" >&2; exit 1; }
  mkdir -p "$SHARE/perf/lib"
  cp "$perf" "$SHARE/perf/perf"
  ldd "$perf" | awk '$3 ~ /^\// { print $3 }' | xargs -r cp -t "$SHARE/perf/lib"
fi
{
  echo "export ROUNDS=$ROUNDS BYTES=$BYTES MODES='$MODES' PERF=$PERF MSG=${MSG:-65536} QPS=${QPS:-4}"
  cat hack/capture/ofi-cpu-guest.sh
} >"$SHARE/ofi-cpu-guest.sh"
RINGCAP_VM_SHARE=$SHARE hack/vm/run.sh "$SHARE/ofi-cpu-guest.sh" | tee "$SHARE/run.log"
# CPU seconds per GiB of each run, then per mode and side the medians and the per-round ratios.
tr -d '\r' <"$SHARE/run.log" | grep -a '^ofi-cpu: round=' | awk -v bytes="$BYTES" '
  function secs(s,  m) { m = s; sub(/m.*/, "", m); sub(/^[0-9]+m/, "", s); sub(/s$/, "", s); return m * 60 + s }
  { for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    print f["mode"], f["side"], f["round"], f["transport"], (secs(f["user"]) + secs(f["sys"])) / (bytes / 2^30) }' >"$SHARE/cpu"
CONTENDERS=ofi
[ -n "${OLD:-}" ] && CONTENDERS="ofi ofi-old"
for mode in $MODES; do
  for side in recv send; do
    for t in $CONTENDERS; do
      awk -v m="$mode" -v s="$side" -v t="$t" '
        function med(a, n,  i, j, x) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { x = a[j]; a[j] = a[j-1]; a[j-1] = x }
          return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
        $1 == m && $2 == s { c[$3, $4] = $5; if (!($3 in seen)) { seen[$3] = 1; r[++nr] = $3 } }
        END {
          for (i = 1; i <= nr; i++) if (((r[i], "verbs") in c) && ((r[i], t) in c)) {
            v[++n] = c[r[i], "verbs"]; o[n] = c[r[i], t]; q[n] = c[r[i], t] / c[r[i], "verbs"] }
          if (!n) exit 1
          printf "ofi-cpu %s %s: verbs=%.2f %s=%.2f CPU-s/GiB (medians of %d runs)\n", m, s, med(v, n), t, med(o, n), n
          qm = med(q, n)
          printf "ratio %s/verbs %s-cpu-per-gib %s=%.2f [%.2f, %.2f] (median of the per-round ratios, min and max)\n", t, s, m, qm, q[1], q[n] }' "$SHARE/cpu" ||
        { echo "ofi-cpu: no complete round for $mode $side $t (see $SHARE/run.log)" >&2; exit 1; }
    done
  done
done
