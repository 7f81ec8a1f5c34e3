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
PIDS=()
# On any exit: stop what is still running (by PID), destroy the ring, remove the scratch files.
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  "$A" ring destroy -k "$KEY" >/dev/null 2>&1 || true
  rm -rf "$OUT"
}
trap cleanup EXIT

freeport() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# run BIN: one capture of BYTES; prints "SEND-CPU RECV-CPU GBPS SEND-USER RECV-USER" (CPU in seconds).
run() {
  local rc=$1 port; port=$(freeport)
  shift
  "$rc" ring create -k "$KEY" -b $((4 * MSG * 16)) -n 8 >/dev/null 2>&1
  "$rc" ring read -k "$KEY" -s 2>"$OUT/read.log" & local reader=$!
  PIDS=("$reader")
  /usr/bin/time -f '%U %S' -o "$OUT/recv.time" "$rc" recv -k "$KEY" --transport ofi --ofi-provider 'tcp;ofi_rxm' --ofi-domain lo \
    --listen "127.0.0.1:$port" --mode write --qps "$QPS" --msg-bytes "$MSG" --stop-observations 1 --metrics-addr '' 2>"$OUT/recv.log" & local recv=$!
  PIDS+=("$recv")
  local i
  for i in $(seq 100); do grep -q 'Listening for senders' "$OUT/recv.log" && break; sleep 0.1; done
  /usr/bin/time -f '%U %S' -o "$OUT/send.time" "$rc" send --connect "127.0.0.1:$port" --transport ofi --ofi-domain lo --bytes "$BYTES" --no-fill -q "$@" \
    >"$OUT/send.out" 2>"$OUT/send.log"
  wait "$recv" "$reader"
  PIDS=()
  "$rc" ring destroy -k "$KEY" >/dev/null 2>&1
  grep -q 'complete=true' "$OUT/send.out" || { cat "$OUT/send.out" "$OUT/send.log" "$OUT/recv.log" >&2; exit 1; }
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
