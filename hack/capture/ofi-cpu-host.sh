#!/usr/bin/env bash
# CPU per GiB of two ringcap binaries over libfabric's tcp;ofi_rxm on the host's loopback, in one
# run: each round moves BYTES with each binary (write mode, 64 KiB messages, 4 endpoints, the
# sender unfilled, a `ring read -s` draining an 8-block ring; the binaries' order alternating),
# and records the user+sys time of its `ringcap recv` and `ringcap send`. Prints each run, then
#   ratio B/A SIDE-cpu=<median of the per-round ratios> [min, max]   (SIDE: send, recv, both)
#   ratio B/A SIDE-user=...   the same of user time alone (the kernel's TCP work is most of sys)
# Usage: hack/capture/ofi-cpu-host.sh A-BINARY B-BINARY [EXTRA SEND FLAGS...]
# Settings: ROUNDS (7), BYTES (2147483648), MSG (65536), QPS (4).
set -euo pipefail
A=$1 B=$2
shift 2
ROUNDS=${ROUNDS:-7} BYTES=${BYTES:-2147483648} MSG=${MSG:-65536} QPS=${QPS:-4}
OUT=$(mktemp -d)
KEY=$(printf '%x' $((0x5000 + 2 * (RANDOM % 2048))))
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/hack/capture/ofi-host-lib.sh"
# On any exit: destroy the ring, remove the scratch files (a capture stops what it started).
cleanup() {
  "$A" ring destroy -k "$KEY" >/dev/null 2>&1 || true
  rm -rf "$OUT"
}
trap cleanup EXIT

# run BIN: one capture of BYTES; prints "SEND-CPU RECV-CPU GBPS SEND-USER RECV-USER" (CPU in seconds).
run() {
  local rc=$1
  shift
  ofi_capture "$rc" "$KEY" "$OUT" timed --bytes "$BYTES" "$@" || return 1
  echo "$(awk '{ print $1 + $2 }' "$OUT/send.time") $(awk '{ print $1 + $2 }' "$OUT/recv.time") $(sed -n 's/.* gbps=\([0-9.]*\) .*/\1/p' "$OUT/send.out")" \
    "$(awk '{ print $1 }' "$OUT/send.time") $(awk '{ print $1 }' "$OUT/recv.time")"
}

gib=$(awk -v b="$BYTES" 'BEGIN { print b / 2^30 }')
: >"$OUT/ratios"
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then a=$(run "$A" "$@"); b=$(run "$B" "$@"); else b=$(run "$B" "$@"); a=$(run "$A" "$@"); fi
  read -r as ar ag au av <<<"$a"
  read -r bs br bg bu bv <<<"$b"
  echo "ofi-cpu-host: round $r A send=$as recv=$ar user=$au+$av gbps=$ag B send=$bs recv=$br user=$bu+$bv gbps=$bg (CPU-s for $gib GiB)"
  awk -v as="$as" -v ar="$ar" -v bs="$bs" -v br="$br" -v au="$au" -v av="$av" -v bu="$bu" -v bv="$bv" \
    'BEGIN { print bs / as, br / ar, (bs + br) / (as + ar), bu / au, bv / av, (bu + bv) / (au + av) }' >>"$OUT/ratios"
done
for k in 1:send-cpu 2:recv-cpu 3:both-cpu 4:send-user 5:recv-user 6:both-user; do
  awk -v c="${k%%:*}" '{ print $c }' "$OUT/ratios" | sort -g | awk -v s="${k#*:}" '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "ratio B/A %s=%.3f [%.3f, %.3f] (%d rounds)\n", s, m, v[1], v[NR], NR }'
done
