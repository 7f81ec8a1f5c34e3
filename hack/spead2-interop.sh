#!/usr/bin/env bash
# Interoperability check of `ringcap recv --protocol spead` against SARAO's spead2, the SPEAD
# reference implementation (manual; not part of CI). Builds spead2_send and spead2_recv with
# hack/spead2-build.sh from a spead2 v3 checkout you provide (github.com/ska-sa/spead2, tag
# v3.13.0), then sends one stream twice over UDP on loopback:
#   1. spead2_send --verify into spead2_recv --verify: every heap arrives complete and its
#      payload is spead2's verification sequence (std::minstd_rand, big-endian 32-bit words);
#   2. the same stream into `ringcap recv --protocol spead`, placed by heap counter (spead2_send's
#      heaps carry no timestamp item: item 0x1 with a step of 1 per heap is the only index they
#      have): the ring holds the same sequence byte for byte, read by `ringcap ring read` and,
#      when hack/dada-interop.sh has built PSRDADA in $RINGCAP_CACHE/psrdada, by dada_dbdisk
#      too; the receiver's final status (--summary-file, the /status JSON) shows no loss.
# spead2_send's first heap also carries the item descriptors, ahead of its data: ringcap places
# its data as every other heap's (the descriptor bytes are not data), so the ring holds every
# heap, from the first. spead2_send's end-of-stream heap (stream control 0x6 = 2) is counted
# as control and ends ringcap's observation.
#
#   hack/spead2-interop.sh /path/to/spead2-checkout
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=${1:?usage: hack/spead2-interop.sh SPEAD2_CHECKOUT}
hack/spead2-build.sh "$SRC"
. hack/env.sh
KEY=${INTEROP_KEY:-5a52}
PORT=${SPEAD2_PORT:-7150}
HEAP=${SPEAD2_HEAP_BYTES:-65536} # spead2_send's --heap-size: one item of HEAP bytes per heap
HEAPS=${SPEAD2_HEAPS:-128}        # data heaps spead2_send sends (the first with the descriptors)
RATE=${SPEAD2_RATE:-0.2}          # Gb/s
B=$RINGCAP_CACHE/spead2
P=$RINGCAP_CACHE/psrdada
R=$B/ringcap
work=$(mktemp -d)
cleanup() {
  local rc=$?
  jobs -p | xargs -r kill 2>/dev/null || true
  wait 2>/dev/null || true
  "$R" ring destroy -k "$KEY" >/dev/null 2>&1 || true
  if [ -n "${KEEP_WORK:-}" ]; then echo "work: $work"; else rm -rf "$work"; fi
  [ $rc -eq 0 ] && echo "spead2 interop: OK" || echo "spead2 interop: FAILED" >&2
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
fail() { echo "spead2 interop: $*" >&2; exit 1; }
bound() { # wait until something listens on UDP port $1
  for _ in $(seq 1 100); do
    [ -n "$(ss -Huln "sport = :$1")" ] && return 0
    sleep 0.1
  done
  fail "nothing listens on UDP port $1"
}
sequence() { # words $1.. of spead2's verification sequence, $2 of them, as bytes
  /usr/bin/python3 - "$1" "$2" <<'EOF'
import sys
a, m = 48271, 2147483647  # std::minstd_rand, seed 1
skip, n = int(sys.argv[1]), int(sys.argv[2])
x = pow(a, skip, m)
out = bytearray()
for _ in range(n):
    x = x * a % m
    out += x.to_bytes(4, "big")
sys.stdout.buffer.write(out)
EOF
}
send() { # in the background, so that a signal's trap runs at once
  "$B/spead2_send" --heaps "$HEAPS" --heap-size "$HEAP" --items 1 --verify --rate "$RATE" "127.0.0.1:$PORT" >"$work/$1.log" 2>&1 &
  wait $! || fail "spead2_send: $(cat "$work/$1.log")"
  cat "$work/$1.log"
}
go build -o "$R" ./cmd/ringcap

echo "== 1: spead2_send into spead2_recv ($HEAPS heaps of $HEAP bytes at $RATE Gb/s)"
timeout 60 "$B/spead2_recv" --verify --quiet "127.0.0.1:$PORT" >"$work/spead2_recv.log" 2>&1 &
srecv=$!
bound "$PORT"
send send1
wait "$srecv" || fail "spead2_recv: $(cat "$work/spead2_recv.log")"
grep -E "^Received [0-9]+ heaps|^(packets|incomplete_heaps_evicted|too_old_heaps|worker_blocked):" "$work/spead2_recv.log"
grep -qx "Received $HEAPS heaps" "$work/spead2_recv.log" || fail "spead2_recv did not receive $HEAPS heaps"
grep -qx "incomplete_heaps_evicted: 0" "$work/spead2_recv.log" || fail "spead2_recv evicted incomplete heaps"

echo "== 2: spead2_send into ringcap recv --protocol spead (placed by heap counter)"
bytes=$((HEAPS * HEAP))
readers=1
[ -x "$P/dada_dbdisk" ] && readers=2
# The script creates and destroys the ring, so that dada_dbdisk may detach after the receiver ends.
"$R" ring create -k "$KEY" -b 1048576 -n 8 -r "$readers" 2>/dev/null
"$R" recv -k "$KEY" --metrics-addr "" \
  --protocol spead --udp-ports "$PORT" --udp-address 127.0.0.1 \
  --spead-timestamp-id 0x1 --spead-timestamp-step 1 --spead-heap-bytes "$HEAP" \
  --spead-sync-time "$(date +%s)" --spead-sample-rate 1000 --header FILE_SIZE=100000000 \
  --summary-file "$work/summary.json" 2>"$work/recv.log" &
rrecv=$!
bound "$PORT"
timeout 60 "$R" ring read -k "$KEY" -s -o "$work/ring.bin" 2>"$work/read.log" &
reader=$!
if [ "$readers" = 2 ]; then
  mkdir "$work/dada"
  timeout 60 "$P/dada_dbdisk" -k "$KEY" -D "$work/dada" -s >"$work/dbdisk.log" 2>&1 &
  dbdisk=$!
fi
sleep 0.5
send send2
wait "$rrecv" || fail "ringcap recv: $(tail -5 "$work/recv.log")"
wait "$reader" || fail "ringcap ring read: $(cat "$work/read.log")"
jq -c '.packets' "$work/summary.json"
pk() { jq -r ".packets.$1" "$work/summary.json"; }
[ "$(pk receivedBytes)" = "$bytes" ] || fail "ringcap received $(pk receivedBytes) bytes, want $bytes"
for c in kernelDrops truncated late outOfWindow duplicate malformed outOfRange beforeStart zeroFilledBytes; do
  [ "$(pk "$c")" = 0 ] || fail "ringcap counted $c=$(pk "$c"), want 0"
done
spackets=$(sed -n 's/^packets: //p' "$work/spead2_recv.log")
[ "$(pk packets)" = "$spackets" ] || fail "ringcap counted $(pk packets) packets, spead2_recv $spackets"
[ "$(pk control)" -ge 1 ] || fail "ringcap counted $(pk control) control packets, want 1 (spead2_send's end-of-stream heap) and any of descriptors only"
grep -q "ended: the sender's stream-stop heap" "$work/summary.json" || fail "ringcap's observation did not end at spead2_send's stop heap: $(jq -c .lastObservation "$work/summary.json")"
echo "ringcap: $(pk packets) packets as spead2_recv; $(pk receivedPackets) placed, $(pk control) control (the end-of-stream heap, which ended the observation, and any packet of descriptors only), no loss"
sequence 0 "$((bytes / 4))" >"$work/expected.bin"
[ "$(stat -c %s "$work/ring.bin")" = "$bytes" ] || fail "ringcap ring read got $(stat -c %s "$work/ring.bin") bytes, want $bytes"
cmp "$work/expected.bin" "$work/ring.bin" || fail "the ring's bytes differ from spead2's verification sequence (heaps 1..$HEAPS)"
echo "ring read: $bytes bytes = spead2_recv's verified payload of heaps 1..$HEAPS"
if [ "$readers" = 2 ]; then
  wait "$dbdisk" || fail "dada_dbdisk: $(cat "$work/dbdisk.log")"
  f=$(ls "$work"/dada/*.dada) || fail "dada_dbdisk wrote no file"
  cmp <(tail -c +4097 "$f") "$work/expected.bin" || fail "dada_dbdisk's file differs from spead2's sequence"
  echo "dada_dbdisk: its file holds the same $bytes bytes"
else
  echo "dada_dbdisk: skipped (no PSRDADA build in \$RINGCAP_CACHE/psrdada; run hack/dada-interop.sh first)"
fi
