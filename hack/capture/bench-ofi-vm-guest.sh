#!/usr/bin/env bash
# Guest half of `make bench-ofi`'s VM part (runs inside the Soft-RoCE VM, started in the share
# with ringcap and ofifloor in ./bin): on the same rxe link (rxe0 -> rxe1), write mode,
#   verbs         ringcap over raw verbs,
#   ofi-verbs     ringcap over libfabric's verbs;ofi_rxm,
#   ofi-floor     ofifloor (hack/capture/ofifloor) over verbs;ofi_rxm: fi_writedata alone,
#   ofi-floor-len ofifloor -L, with ringcap's length messages (only with FLOOR_LENMSG=1),
#   ofi-floor-mt  ofifloor -T, its writer with a thread per endpoint (only with FLOOR_THREADS=1),
#   ofi-verbs-tN  ringcap over verbs;ofi_rxm with N posting threads, pinned to the vCPUs in turn
#                 (--post-threads N; for each N in SENDER_THREADS, e.g. "1 4"),
#   ofi-verbs-eN  ringcap over verbs;ofi_rxm with the Nth of OFI_ENVS (NAME=VALUE[,NAME=VALUE...])
#                 in both processes' environment,
# RUNS runs of DUR seconds each, the order rotating; prints every run's figures
# (`bench-ofi-vm: run N verbs=G ofi-verbs=G ofi-floor=G ...`, Gb/s as each sender reports it),
# each process's CPU (`bench-ofi-vm: cpu run=N contender=C bytes=B send=S recv=S`, user+sys
# seconds from bash `times` of its wrapper), what left rxe0's netdev (`bench-ofi-vm: wire
# run=N contender=C packets=P bytes=B`, veth0's tx counters) and ofifloor's own summary line
# (`bench-ofi-vm: ofifloor send: ...`, with its CPU during the stream alone) for the host half
# to summarise.
set -uo pipefail
WORK=/tmp/bench-ofi # the guest's tmpfs: the binaries and the logs off the 9p share
mkdir -p "$WORK/bin" && cp bin/ringcap bin/ofifloor "$WORK/bin/" && cd "$WORK" || exit 1
export PATH=$WORK/bin:$PATH IPATH_NO_BACKTRACE=1
RUNS=${RUNS:-5} DUR=${DUR:-6} MSG=${MSG:-65536} QPS=${QPS:-4} FLOOR_LENMSG=${FLOOR_LENMSG:-0} FLOOR_THREADS=${FLOOR_THREADS:-0} SENDER_THREADS=${SENDER_THREADS:-}
ENVS=() # NAME=VALUE words for both of run_ringcap's processes (ofi-verbs-eN)
SRV_IP=198.18.0.2 CLI_IP=198.18.0.1 PORT=18900
CONTENDERS=(verbs ofi-verbs ofi-floor)
[ "$FLOOR_LENMSG" = 1 ] && CONTENDERS+=(ofi-floor-len)
[ "$FLOOR_THREADS" = 1 ] && CONTENDERS+=(ofi-floor-mt)
for t in $SENDER_THREADS; do CONTENDERS+=("ofi-verbs-t$t"); done
OFI_ENV=()  # the settings of each ofi-verbs-eN, by N
for e in ${OFI_ENVS:-}; do OFI_ENV+=("$e") && CONTENDERS+=("ofi-verbs-e$((${#OFI_ENV[@]} - 1))"); done

# timed OUT CMD...: runs CMD with its output in OUT.log and its user and sys time in OUT.times.
timed() {
  local out=$1
  shift
  bash -c '"$@" >"$0.log" 2>&1; rc=$?; times >"$0.times"; exit $rc' "$out" "$@"
}

# cpu OUT: the user+sys seconds in OUT.times (its second line: the children's times, XmY.Zs).
cpu() {
  sed -n 2p "$1.times" | tr 'ms' '  ' | awk '{ printf "%.3f", $1 * 60 + $2 + $3 * 60 + $4 }'
}

# listening LOG PATTERN PID: waits until LOG has PATTERN, at most a minute; fails when PID exits first.
listening() {
  for _ in $(seq 600); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    kill -0 "$3" 2>/dev/null || break
    sleep 0.1
  done
  echo "bench-ofi-vm: the receiver did not listen:" >&2
  cat "$1" >&2
  return 1
}

# field NAME LINE: NAME=value out of LINE.
field() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# run_ringcap TRANSPORT [SEND-ARGS]: recv on rxe1 into a fresh ring that a reader drains, send
# --no-fill from rxe0 for DUR seconds, both with ENVS in their environment; prints "Gb/s bytes
# send-cpu recv-cpu".
run_ringcap() {
  local t=$1 port=$((PORT++)) key=c0$((PORT % 100))0 tr=()
  shift
  [ "$t" = ofi ] && tr=(--transport ofi)
  local rx_tr=("${tr[@]}") tx_tr=("${tr[@]}" "$@")
  [ "$t" = ofi ] && rx_tr+=(--ofi-provider 'verbs;ofi_rxm' --ofi-domain rxe1) && tx_tr+=(--ofi-domain rxe0)
  ringcap ring create -k "$key" -n 16 -b 1048576 >/dev/null 2>&1 || { echo "ring create failed" >&2; return 1; }
  rm -f recv.log recv.times send.log send.times read.log # a previous run's recv.log would say "Listening" too early
  timed recv env "${ENVS[@]}" ringcap recv -k "$key" "${rx_tr[@]}" --mode write --qps "$QPS" --msg-bytes "$MSG" --listen "$SRV_IP:$port" \
    --metrics-addr "" --stop-observations 1 &
  local rx=$!
  ringcap ring read -k "$key" -s >read.log 2>&1 &
  local rd=$!
  # A sender that failed (refused: the receiver not listening yet) leaves no one to end the receiver.
  if ! listening recv.log "Listening for senders" "$rx" ||
    ! timed send env "${ENVS[@]}" ringcap send --connect "$SRV_IP:$port" "${tx_tr[@]}" --mode write --qps "$QPS" --msg-bytes "$MSG" --duration "${DUR}s" --no-fill; then
    kill "$rx" 2>/dev/null
  fi
  wait "$rx"; local rxrc=$?
  [ "$rxrc" = 0 ] || kill "$rd" 2>/dev/null
  wait "$rd"
  ringcap ring destroy -k "$key" >/dev/null 2>&1
  local line bytes secs rbytes
  line=$(grep '^send: bytes=' send.log)
  bytes=$(field bytes "$line"); secs=$(field seconds "$line")
  rbytes=$(sed -n 's/.*read: bytes=\([0-9]*\).*/\1/p' read.log)
  if [ "$rxrc" != 0 ] || ! echo "$line" | grep -q 'complete=true' || [ "${bytes:-0}" -le 0 ] || [ "$rbytes" != "$bytes" ]; then
    echo "bench-ofi-vm: $t failed (recv rc=$rxrc, sent ${bytes:-?}, read ${rbytes:-?}):" >&2
    cat send.log recv.log read.log >&2
    return 1
  fi
  awk -v b="$bytes" -v s="$secs" -v tx="$(cpu send)" -v rx="$(cpu recv)" 'BEGIN { printf "%.4f %.0f %s %s\n", b * 8 / s / 1e9, b, tx, rx }'
}

# run_floor [-L] [-T]: ofifloor's receiver on rxe1, its writer from rxe0 for DUR seconds (-L:
# with length messages, -T: the writer's endpoints each on a thread); prints "Gb/s bytes
# send-cpu recv-cpu".
run_floor() {
  local port=$((PORT++)) rx_opt=() tx_opt=()
  for o in "$@"; do case $o in -L) rx_opt+=(-L) ;; -T) tx_opt+=(-T) ;; esac; done
  rm -f recv.log recv.times send.log send.times
  timed recv ofifloor recv -p 'verbs;ofi_rxm' -d rxe1 -a "$SRV_IP" -l "$SRV_IP:$port" -e "$QPS" -m "$MSG" -b 1048576 -n 16 "${rx_opt[@]}" &
  local rx=$!
  if ! listening recv.log "listening on" "$rx" ||
    ! timed send ofifloor send -p 'verbs;ofi_rxm' -d rxe0 -a "$CLI_IP" -c "$SRV_IP:$port" -t "$DUR" "${tx_opt[@]}"; then
    kill "$rx" 2>/dev/null
  fi
  wait "$rx"; local rxrc=$?
  local line bytes
  line=$(grep '^ofifloor send: bytes=' send.log)
  bytes=$(field bytes "$line")
  if [ "$rxrc" != 0 ] || ! echo "$line" | grep -q 'complete=true' || [ "${bytes:-0}" -le 0 ]; then
    echo "bench-ofi-vm: ofifloor $* failed (recv rc=$rxrc):" >&2
    cat send.log recv.log >&2
    return 1
  fi
  echo "bench-ofi-vm: $line" >&2
  echo "$(field gbps "$line") $bytes $(cpu send) $(cpu recv)"
}

# wire: veth0's (rxe0's netdev: the senders' side) transmitted packets and bytes so far.
wire() { echo "$(cat /sys/class/net/veth0/statistics/tx_packets) $(cat /sys/class/net/veth0/statistics/tx_bytes)"; }

# cpus_in_turn N: N CPUs of this machine, in turn (0,1,0,1 for 4 on 2 vCPUs).
cpus_in_turn() {
  local list=() i
  for i in $(seq 0 $(($1 - 1))); do list+=($((i % $(nproc)))); done
  (IFS=,; echo "${list[*]}")
}

contender() {
  case $1 in
  verbs) run_ringcap verbs ;;
  ofi-verbs) run_ringcap ofi ;;
  ofi-floor) run_floor ;;
  ofi-floor-len) run_floor -L ;;
  ofi-floor-mt) run_floor -T ;;
  ofi-verbs-e*) IFS=, read -r -a ENVS <<<"${OFI_ENV[${1#ofi-verbs-e}]}" && run_ringcap ofi ;;
  ofi-verbs-t*) run_ringcap ofi --post-threads "${1#ofi-verbs-t}" --pin-cpu "$(cpus_in_turn "${1#ofi-verbs-t}")" ;;
  esac
}

n=${#CONTENDERS[@]}
for r in $(seq "$RUNS"); do
  declare -A got=()
  for i in $(seq 0 $((n - 1))); do
    c=${CONTENDERS[$(((r - 1 + i) % n))]} # the order rotates from run to run
    # shellcheck disable=SC2046 # two words each: packets and bytes
    set -- $(wire)
    out=$(contender "$c") || exit 1
    got[$c]=$out
    # shellcheck disable=SC2046
    set -- "$@" $(wire)
    echo "bench-ofi-vm: wire run=$r contender=$c packets=$(($3 - $1)) bytes=$(($4 - $2))"
  done
  line="bench-ofi-vm: run $r"
  for c in "${CONTENDERS[@]}"; do
    # shellcheck disable=SC2086 # four words: Gb/s, bytes, send and recv CPU
    set -- ${got[$c]}
    line+=" $c=$1"
    echo "bench-ofi-vm: cpu run=$r contender=$c bytes=$2 send=$3 recv=$4"
  done
  echo "$line"
  unset got
done
