#!/usr/bin/env bash
# The main job, for now: a PSRDADA ring demo.
#   1. create a ring (dada_db style) with a header ring,
#   2. start a reader that verifies every byte of a deterministic stream,
#   3. write the stream (with a header) while `ringcap ring monitor` shows the ring,
#   4. check the reader's result, show the ring's shared state, destroy the ring.
# Cleans up (ring, background processes) on any failure.
#
#   hack/demo.sh                       # 1 GiB through 16 x 4 MiB blocks on key dada
#   DEMO_KEY=eada DEMO_BYTES=$((256<<20)) hack/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/env.sh

KEY=${DEMO_KEY:-dada}
BYTES=${DEMO_BYTES:-$((1 << 30))}
BUFSZ=${DEMO_BUFSZ:-$((4 << 20))}
NBUFS=${DEMO_NBUFS:-16}
SEED=${DEMO_SEED:-20260101}
BIN=${RINGCAP_BIN:-bin/ringcap}

work=$(mktemp -d)
created=""
pids=()
cleanup() {
  local rc=$?
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "$created" ]; then "$BIN" ring destroy -k "$KEY" 2>/dev/null || true; fi
  rm -rf "$work"
  [ $rc -eq 0 ] || echo "demo: FAILED (exit $rc)" >&2
  exit $rc
}
trap cleanup EXIT INT TERM

echo "== build"
go build -o "$BIN" ./cmd/ringcap

echo "== create ring $KEY: $NBUFS x $BUFSZ bytes, 1 reader"
"$BIN" ring create -k "$KEY" -b "$BUFSZ" -n "$NBUFS" -r 1
created=1
"$BIN" ring info -k "$KEY" | sed -n 1,3p

echo "== read (verifying seed $SEED) while writing $BYTES bytes"
"$BIN" ring read -k "$KEY" --verify "$SEED" -s --header-out "$work/header" 2>"$work/read.log" &
reader=$!
pids+=("$reader")
"$BIN" ring monitor -k "$KEY" --interval 250ms >"$work/monitor.log" 2>&1 &
pids+=($!)
"$BIN" ring write -k "$KEY" --seed "$SEED" --bytes "$BYTES" --header SOURCE=demo
if ! wait "$reader"; then
  cat "$work/read.log" >&2
  echo "demo: the reader reported an error" >&2
  exit 1
fi
cat "$work/read.log"
grep -q "^read: bytes=$BYTES .* mismatches=0$" "$work/read.log" || { echo "demo: reader did not verify $BYTES bytes" >&2; exit 1; }

echo "== header the reader received"
cat "$work/header"
echo "== monitor (dada_dbmonitor format)"
head -n 14 "$work/monitor.log"
echo "   ..."
tail -n 3 "$work/monitor.log"
echo "== shared state after the observation"
"$BIN" ring info -k "$KEY" | sed -n '5,9p'

echo "== destroy"
"$BIN" ring destroy -k "$KEY"
created=""
if "$BIN" ring info -k "$KEY" >/dev/null 2>&1; then echo "demo: ring still exists" >&2; exit 1; fi
echo "demo: OK — $BYTES bytes written, read and verified through ring $KEY"
