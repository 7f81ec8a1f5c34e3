#!/usr/bin/env bash
# The receiver's own CPU per GiB on Soft-RoCE, an old build against this one in the same boot
# (issue 38): ringcap recv (4 QPs, 8 x 4 MiB ring, no --busy-poll) takes BYTES from
# ringcap send, a `ring read -s` draining the ring; the recv process's user+sys (bash
# `times` of its parent) per GiB, both modes, ROUNDS rounds, old and new alternating which
# goes first. Prints one `recvcpu …` line per run and `ratio recv-cpu-per-gib MODE new/old=…`
# (median of the per-round ratios, with their range). Each receiver is fed by the sender of
# its own build (their handshake versions may differ). Settings: OLD (commit, required), NEW
# (commit; default the working tree), ROUNDS (3), BYTES (536870912). Under TCG the receiver's CPU tracks the run's length (it
# sleeps and wakes per completion), and the link's rate swings from run to run.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
. hack/env.sh
: "${OLD:?OLD=<commit> to compare with}"
ROUNDS=${ROUNDS:-3} BYTES=${BYTES:-536870912}
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
sed -e "s/@ROUNDS@/$ROUNDS/" -e "s/@BYTES@/$BYTES/" hack/capture/recv-cpu-guest.sh > "$SHARE/guest.sh"
chmod +x "$SHARE/guest.sh"
RINGCAP_VM_SHARE=$SHARE hack/vm/run.sh "$SHARE/guest.sh" | tee "$SHARE/run.log"
# CPU seconds per GiB of each run, then the per-round new/old ratios per mode, sorted.
ratios=$(grep -a '^recvcpu ' "$SHARE/run.log" | awk -v bytes="$BYTES" '
  function secs(s,  m) { m = s; sub(/m.*/, "", m); sub(/^[0-9]+m/, "", s); sub(/s$/, "", s); return m * 60 + s }
  { for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    c[f["round"] SUBSEP f["mode"] SUBSEP f["bin"]] = (secs(f["user"]) + secs(f["sys"])) / (bytes / 2^30) }
  END { for (k in c) { split(k, p, SUBSEP)
      if (p[3] == "new" && ((p[1] SUBSEP p[2] SUBSEP "old") in c)) print p[2], c[k] / c[p[1] SUBSEP p[2] SUBSEP "old"] } }' | sort -k1,1 -k2,2g)
for mode in send write; do
  echo "$ratios" | awk -v m="$mode" '$1 == m { x[++n] = $2 }
    END { if (n) printf "ratio recv-cpu-per-gib %s new/old=%.2f [%.2f, %.2f] (%d rounds)\n", m, x[int((n + 1) / 2)], x[1], x[n], n }'
done
