#!/usr/bin/env bash
# Guest half of `make bench-ofi`'s VM part (runs inside the Soft-RoCE VM, started in the share
# with ringcap in ./bin): ringcap over raw verbs and over libfabric's verbs;ofi_rxm on the same
# rxe link (rxe0 -> rxe1), write mode, alternated, RUNS runs of DUR seconds each; prints every
# run's pair (`bench-ofi-vm: run N verbs=G ofi-verbs=G`) for the host half to summarise.
set -uo pipefail
WORK=/tmp/bench-ofi # the guest's tmpfs: ringcap and the logs off the 9p share
mkdir -p "$WORK/bin" && cp bin/ringcap "$WORK/bin/ringcap" && cd "$WORK" || exit 1
export PATH=$WORK/bin:$PATH
RUNS=${RUNS:-5} DUR=${DUR:-6} MSG=${MSG:-65536} QPS=${QPS:-4}
SRV_IP=198.18.0.2 PORT=18900

# run TRANSPORT: recv on rxe1 into a fresh ring that a reader drains, send --no-fill from rxe0
# for DUR seconds; prints the sender's Gb/s (bytes and seconds of its summary).
run() {
  local t=$1 port=$((PORT++)) key=c0$((PORT % 100))0 tr=()
  [ "$t" = ofi ] && tr=(--transport ofi)
  local rx_tr=("${tr[@]}") tx_tr=("${tr[@]}")
  [ "$t" = ofi ] && rx_tr+=(--ofi-provider 'verbs;ofi_rxm' --ofi-domain rxe1) && tx_tr+=(--ofi-domain rxe0)
  ringcap ring create -k "$key" -n 16 -b 1048576 >/dev/null 2>&1 || { echo "ring create failed" >&2; return 1; }
  rm -f recv.log send.out read.log # a previous run's recv.log would say "Listening" too early
  ringcap recv -k "$key" "${rx_tr[@]}" --mode write --qps "$QPS" --msg-bytes "$MSG" --listen "$SRV_IP:$port" \
    --metrics-addr "" --stop-observations 1 >recv.log 2>&1 &
  local rx=$!
  ringcap ring read -k "$key" -s >read.log 2>&1 &
  local rd=$!
  for _ in $(seq 600); do grep -q "Listening for senders" recv.log 2>/dev/null && break; kill -0 "$rx" 2>/dev/null || break; sleep 0.1; done
  # A sender that failed (refused: the receiver not listening yet) leaves no one to end the receiver.
  ringcap send --connect "$SRV_IP:$port" "${tx_tr[@]}" --mode write --qps "$QPS" --msg-bytes "$MSG" --duration "${DUR}s" --no-fill >send.out 2>&1 ||
    kill "$rx" 2>/dev/null
  wait "$rx"; local rxrc=$?
  [ "$rxrc" = 0 ] || kill "$rd" 2>/dev/null
  wait "$rd"
  ringcap ring destroy -k "$key" >/dev/null 2>&1
  local line bytes secs rbytes
  line=$(grep '^send: bytes=' send.out)
  bytes=$(echo "$line" | tr ' ' '\n' | sed -n 's/^bytes=//p'); secs=$(echo "$line" | tr ' ' '\n' | sed -n 's/^seconds=//p')
  rbytes=$(sed -n 's/.*read: bytes=\([0-9]*\).*/\1/p' read.log)
  if [ "$rxrc" != 0 ] || ! echo "$line" | grep -q 'complete=true' || [ "${bytes:-0}" -le 0 ] || [ "$rbytes" != "$bytes" ]; then
    echo "bench-ofi-vm: $t failed (recv rc=$rxrc, sent ${bytes:-?}, read ${rbytes:-?}):" >&2
    cat send.out recv.log read.log >&2
    return 1
  fi
  awk -v b="$bytes" -v s="$secs" 'BEGIN { printf "%.4f\n", b * 8 / s / 1e9 }'
}

for r in $(seq "$RUNS"); do
  if [ $((r % 2)) = 1 ]; then v=$(run verbs) && o=$(run ofi) || exit 1; else o=$(run ofi) && v=$(run verbs) || exit 1; fi
  echo "bench-ofi-vm: run $r verbs=$v ofi-verbs=$o"
done
