#!/usr/bin/env bash
# Guest half of hack/capture/ofi-cpu.sh (runs in the Soft-RoCE VM, cwd = the share, ringcap in
# ./bin, an older build as ./bin/ringcap-old when given): ringcap over raw verbs and over
# verbs;ofi_rxm (transport ofi; ofi-old with the older build) on the same rxe link (rxe0 ->
# rxe1), BYTES per run, the order rotating, ROUNDS rounds; each process's user and sys time (bash
# `times` of its wrapper) as `ofi-cpu: round=R mode=M transport=T side=recv|send user=… sys=… gbps=…`. With
# PERF=1 one more run of verbs and ofi under `perf record` (perf and its libraries in ./perf),
# its reports in ./perf-*.txt.
set -uo pipefail
WORK=/tmp/ofi-cpu # the guest's tmpfs: ringcap and the logs off the 9p share
mkdir -p "$WORK/bin" && cp bin/ringcap* "$WORK/bin/" || exit 1
CONTENDERS="verbs ofi"
[ -x "$WORK/bin/ringcap-old" ] && CONTENDERS="verbs ofi ofi-old"
SHARE=$PWD
cd "$WORK" || exit 1
export PATH=$WORK/bin:$PATH IPATH_NO_BACKTRACE=1
ROUNDS=${ROUNDS:-5} BYTES=${BYTES:-134217728} MSG=${MSG:-65536} QPS=${QPS:-4} MODES=${MODES:-write} PERF=${PERF:-0}
SRV_IP=198.18.0.2 PORT=18950

# timed OUT CMD...: runs CMD with its output in OUT.log and its user and sys time in OUT.times.
timed() {
  local out=$1
  shift
  bash -c '"$@" >"$0.log" 2>&1; rc=$?; times >"$0.times"; exit $rc' "$out" "$@"
}

# cpu OUT: "user=… sys=…" from OUT.times (its second line: the children's times).
cpu() {
  # shellcheck disable=SC2046 # two words; no process substitution: the guest has no /dev/fd
  set -- $(sed -n 2p "$1.times")
  echo "user=${1:-?} sys=${2:-?}"
}

# listening RX: waits until receiver RX has logged that it listens (recv.log, removed before it
# started: a previous run's would let the sender connect too early, be refused, and leave this
# receiver waiting for a sender forever), at most 5 minutes; fails when it exits first.
listening() {
  local i
  for i in $(seq 3000); do
    grep -q "Listening for senders" recv.log 2>/dev/null && return 0
    kill -0 "$1" 2>/dev/null || break
    sleep 0.1
  done
  echo "ofi-cpu: the receiver did not listen (after $((i / 10)) s):" >&2
  cat recv.log >&2
  return 1
}

# run N MODE TRANSPORT [PERF_PREFIX]: capture N (its port) of BYTES; prints the two ofi-cpu
# lines' tails. A sender that fails ends its receiver, which would otherwise wait for the next.
run() {
  local port=$((PORT + $1)) key=c1$(printf %02d $(($1 % 100)))0 mode=$2 t=$3 perf=${4:-} tr=() rc=ringcap
  [ "$t" = ofi-old ] && rc=ringcap-old
  [ "$t" != verbs ] && tr=(--transport ofi)
  local rx_tr=("${tr[@]}") tx_tr=("${tr[@]}") rx_pre=() tx_pre=()
  [ "$t" != verbs ] && rx_tr+=(--ofi-provider 'verbs;ofi_rxm' --ofi-domain rxe1) && tx_tr+=(--ofi-domain rxe0)
  if [ -n "$perf" ]; then
    rx_pre=("$perf" record -e cpu-clock -F 1999 -g -o "$WORK/perf-recv-$mode-$t.data" --)
    tx_pre=("$perf" record -e cpu-clock -F 1999 -g -o "$WORK/perf-send-$mode-$t.data" --)
  fi
  ringcap ring create -k "$key" -n 16 -b 1048576 >/dev/null 2>&1 || { echo "ring create failed" >&2; return 1; }
  rm -f recv.log recv.times send.log send.times read.log
  timed recv "${rx_pre[@]}" "$rc" recv -k "$key" "${rx_tr[@]}" --mode "$mode" --qps "$QPS" --msg-bytes "$MSG" \
    --listen "$SRV_IP:$port" --metrics-addr "" --stop-observations 1 &
  local rx=$!
  ringcap ring read -k "$key" -s >read.log 2>&1 &
  local rd=$!
  local txrc=1
  if listening "$rx"; then
    timed send "${tx_pre[@]}" "$rc" send --connect "$SRV_IP:$port" "${tx_tr[@]}" --mode "$mode" --qps "$QPS" --msg-bytes "$MSG" \
      --bytes "$BYTES" --no-fill
    txrc=$?
  fi
  [ "$txrc" = 0 ] || kill "$rx" 2>/dev/null
  wait "$rx"; local rxrc=$?
  [ "$rxrc" = 0 ] || kill "$rd" 2>/dev/null
  wait "$rd"
  ringcap ring destroy -k "$key" >/dev/null 2>&1
  local rbytes gbps
  rbytes=$(sed -n 's/.*read: bytes=\([0-9]*\).*/\1/p' read.log)
  gbps=$(grep '^send: bytes=' send.log | grep -o 'gbps=[0-9.]*') # the summary's, not a progress line's
  if [ "$txrc" != 0 ] || [ "$rxrc" != 0 ] || [ "$rbytes" != "$BYTES" ]; then
    echo "ofi-cpu: $mode $t failed (send rc=$txrc, recv rc=$rxrc, read ${rbytes:-?} of $BYTES):" >&2
    cat send.log recv.log read.log >&2
    return 1
  fi
  echo "side=recv $(cpu recv) $gbps"
  echo "side=send $(cpu send) $gbps"
}

n=0
for r in $(seq "$ROUNDS"); do
  for mode in $MODES; do
    # shellcheck disable=SC2086 # the contenders, rotated by one each round
    set -- $CONTENDERS
    for _ in $(seq $(((r - 1) % $#))); do set -- "${@:2}" "$1"; done
    for t in "$@"; do
      n=$((n + 1)) # here, not in run: run's $(...) is a subshell
      out=$(run "$n" "$mode" "$t") || exit 1
      echo "$out" | sed "s/^/ofi-cpu: round=$r mode=$mode transport=$t /"
    done
  done
done

if [ "$PERF" = 1 ]; then
  export LD_LIBRARY_PATH=$SHARE/perf/lib
  P=$SHARE/perf/perf
  for mode in $MODES; do
    for t in verbs ofi; do
      n=$((n + 1))
      run "$n" "$mode" "$t" "$P" >/dev/null || exit 1
      for side in recv send; do
        d=$WORK/perf-$side-$mode-$t.data
        "$P" report -i "$d" --stdio --no-children --sort dso,sym --percent-limit 0.5 >"$SHARE/perf-$side-$mode-$t.txt" 2>/dev/null
        "$P" report -i "$d" --stdio --no-children --sort dso --percent-limit 0.5 -g none >"$SHARE/perf-$side-$mode-$t-dso.txt" 2>/dev/null
        echo "ofi-cpu: perf $side $mode $t: $SHARE/perf-$side-$mode-$t.txt"
      done
    done
  done
fi
