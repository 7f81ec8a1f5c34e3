#!/usr/bin/env bash
# Guest half of `make bench-rdma` (runs inside the Soft-RoCE VM, started in the share with
# ringcap in ./bin, then works in tmpfs): perftest and ringcap on the same rxe link in the same
# boot, interleaved, RUNS times each; prints every run's rate (`bench-rdma: runs NAME R1 R2 ...`)
# for the host half to pair and summarise.
set -uo pipefail
# Both contenders run from guest RAM: perftest lives in the initramfs, so ringcap is copied
# off the 9p share (whose page faults and log writes would otherwise go through qemu's
# 9p server) into tmpfs, and every log is written there too.
WORK=/tmp/bench-rdma # the guest's tmpfs, fresh every boot (busybox: no install, mktemp wants XXXXXX)
mkdir -p "$WORK/bin" && cp bin/ringcap "$WORK/bin/ringcap" && cd "$WORK" || exit 1
export PATH=$WORK/bin:$PATH
RUNS=${RUNS:-7} DUR=${DUR:-6} MSG=${MSG:-65536} QPS=${QPS:-4} ACK_TIMEOUT=${ACK_TIMEOUT:-18} BUSY_POLL=${BUSY_POLL:-0}
BUSY=() # BUSY_POLL=1: ringcap polls for completions on both ends, as perftest does
[ "$BUSY_POLL" = 1 ] && BUSY=(--busy-poll)
SRV_IP=198.18.0.2 PORT=18800
RING_NBUFS=${RING_NBUFS:-16} RING_BUFSZ=${RING_BUFSZ:-1048576}
declare -A RES

# perftest TOOL: client on rxe0, server on rxe1, out-of-band TCP on 127.0.0.1. Prints Gb/s.
# Both contenders use the same local ACK timeout (ACK_TIMEOUT, ringcap's default 18): with
# perftest's own 14 (67 ms) the emulated guest's late acknowledgements trigger spurious
# retransmissions that would lower the ceiling ringcap is measured against.
# perftest exits 0 even when it moved nothing: the iterations column is checked. Which side
# reports depends on the test (ib_send_bw: the receiving server; ib_write_bw: the client), so
# the side with the most iterations counts. Under TCG perftest's clock calibration sometimes
# prints BW 0 for iterations that did move; the rate is then bytes / measured window, the
# window being DUR minus perftest's margin (DUR/4 whole seconds) at each end. perftest reports
# in MB/s (2^20 bytes, two decimals: four significant digits, where --report_gbits would give
# one or two at these rates), converted to Gb/s here.
# pair_rate CLI SRV: one perftest pair's Gb/s from its two logs (see perftest); fails, with the
# logs on stderr, when it moved nothing.
pair_rate() {
  # data lines: #bytes #iterations BW_peak BW_average MsgRate
  local line; line=$(cat "$1" "$2" | awk -v m="$MSG" '$1==m && NF>=5 && $2+0 > best { best = $2 + 0; l = $0 } END { print l }')
  local iters bw; iters=$(echo "$line" | awk '{print $2}')
  bw=$(echo "$line" | awk '{ printf "%.4f", $4 * 1048576 * 8 / 1e9 }')
  if [ -z "$line" ] || [ "${iters:-0}" -le 0 ]; then
    echo "bench-rdma: $tool moved nothing (bytes=$MSG iterations=${iters:-none}):" >&2; cat "$1" "$2" >&2
    return 1
  fi
  if ! awk -v b="$bw" 'BEGIN{exit !(b>0)}'; then
    local window=$((DUR - 2 * (DUR / 4)))
    bw=$(awk -v n="$iters" -v m="$MSG" -v d="$window" 'BEGIN { printf "%.6f", n * m * 8 / d / 1e9 }')
    echo "bench-rdma: $tool printed BW 0 for $iters iterations (TCG clock calibration); using bytes/${window}s window" >&2
  fi
  echo "bench-rdma: $tool bytes=$((MSG * iters)) gbps=$bw" >&2
  echo "$bw"
}
perftest() {
  local tool=$1 port=$((PORT++))
  "$tool" -d rxe1 -x 1 -s "$MSG" -q "$QPS" -D "$DUR" -p "$port" -u "$ACK_TIMEOUT" -F >srv.log 2>&1 &
  local srv=$!
  sleep 1
  cpu_window cpu.log
  "$tool" -d rxe0 -x 1 -s "$MSG" -q "$QPS" -D "$DUR" -p "$port" -u "$ACK_TIMEOUT" -F 127.0.0.1 >cli.log 2>&1
  wait "$srv"
  local bw; bw=$(pair_rate cli.log srv.log) || return 1
  echo "$bw $(cpu_busy cpu.log)"
}

# perftest_pairs TOOL: one perftest pair per vCPU at once, the QPs shared out among them (pair
# i gets QPS/NCPU, the first QPS%NCPU one more; at least one each), client i pinned to vCPU i.
# Prints the pairs' summed Gb/s. One perftest process posts and polls from one thread, and the
# other end of ib_write_bw does nothing: one pair leaves a vCPU idle that ringcap's posting
# threads use. This is what perftest moves when it uses every vCPU too.
perftest_pairs() {
  local tool=$1 n i qs=() pids=() srvs=() sum=0 bw
  n=$(nproc)
  for ((i = 0; i < n; i++)); do
    qs[i]=$((QPS / n + (i < QPS % n ? 1 : 0)))
    [ "${qs[i]}" -ge 1 ] || qs[i]=1
    "$tool" -d rxe1 -x 1 -s "$MSG" -q "${qs[i]}" -D "$DUR" -p $((PORT + i)) -u "$ACK_TIMEOUT" -F >srv$i.log 2>&1 &
    srvs+=($!)
  done
  sleep 1
  cpu_window cpu.log
  for ((i = 0; i < n; i++)); do
    taskset -c "$i" "$tool" -d rxe0 -x 1 -s "$MSG" -q "${qs[i]}" -D "$DUR" -p $((PORT + i)) -u "$ACK_TIMEOUT" -F 127.0.0.1 >cli$i.log 2>&1 &
    pids+=($!)
  done
  PORT=$((PORT + n))
  wait "${pids[@]}" "${srvs[@]}"
  for ((i = 0; i < n; i++)); do
    bw=$(pair_rate cli$i.log srv$i.log) || return 1
    sum=$(awk -v a="$sum" -v b="$bw" 'BEGIN { printf "%.4f", a + b }')
  done
  echo "bench-rdma: $tool $n pairs gbps=$sum" >&2
  echo "$sum $(cpu_busy cpu.log)"
}

# cpu_window FILE: in the background, the guest's CPU counters (the `cpu` line of /proc/stat)
# and its count of context switches (the `ctxt` line) at the start and at the end of
# perftest's measuring window (DUR/4 and DUR - DUR/4 seconds from now); cpu_busy FILE waits
# for them and prints how many vCPUs were busy in between, on average (0 to the number of
# vCPUs; idle and iowait count as not busy), and the guest's context switches per second.
# Under TCG every switch and timer wake-up is emulated, so the switches are where CPU outside
# the data path goes.
cpu_window() {
  local margin=$((DUR / 4))
  (sleep "$margin"; grep -E '^(cpu|ctxt) ' /proc/stat >"$1"; sleep $((DUR - 2 * margin)); grep -E '^(cpu|ctxt) ' /proc/stat >>"$1") &
  CPU_WIN=$!
}
cpu_busy() {
  wait "$CPU_WIN"
  awk -v n="$(nproc)" -v w="$((DUR - 2 * (DUR / 4)))" '
    $1 == "cpu" { c++; t = 0; for (i = 2; i <= NF; i++) t += $i; tot[c] = t; idle[c] = $5 + $6 }
    $1 == "ctxt" { x[++k] = $2 }
    END { d = tot[2] - tot[1]
      if (c < 2 || k < 2 || d <= 0) print "nan nan"
      else printf "%.3f %.0f\n", n * (1 - (idle[2] - idle[1]) / d), (x[2] - x[1]) / w }' "$1"
}

# window OUT: ringcap's rate over perftest's measuring window, from the sender's progress lines
# (every 100 ms: acked bytes at elapsed seconds), interpolated at its ends. perftest -D counts
# only the messages completed between DUR/4 and DUR - DUR/4 seconds after its start, leaving
# out the ramp-up and the drain; ringcap's summary covers its whole run, ramp-up and drain
# included (at the end, the queue pairs that lag finish their slices while the others idle,
# so the last 0.2-0.5 s run slower). Like is compared with like here; the whole-run rate is
# reported besides.
window() {
  local margin=$((DUR / 4))
  echo "$1" | awk -v a="$margin" -v b="$((DUR - margin))" '
    /^send: progress / {
      t = ""; x = ""
      for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "acked") x = kv[2]; if (kv[1] == "seconds") t = kv[2] }
      if (t == "" || x == "" || t <= pt) next
      if (pt < a && t >= a) xa = px + (x - px) * (a - pt) / (t - pt)
      if (pt < b && t >= b) xb = px + (x - px) * (b - pt) / (t - pt)
      pt = t; px = x
    }
    END { if (xa == "" || xb == "") print 0; else printf "%.4f\n", (xb - xa) * 8 / (b - a) / 1e9 }'
}

# flow_end NAME RX RD KEY SEND_OUT RECV_LOG READ_LOG: ends one ringcap flow whose sender has
# exited: waits for its receiver (PID RX) and reader (PID RD), destroys ring KEY, and sets
# FLOW_RATES to the flow's rate in Gb/s over perftest's window and over the whole run (not
# printed: it has to run in the shell that started them, to wait for them). Fails, with the
# flow's logs on stderr, unless the receiver succeeded, the sender completed and the reader
# read every byte sent.
flow_end() {
  local name=$1 rx=$2 rd=$3 key=$4 out=$5 rlog=$6 dlog=$7 rxrc
  wait "$rx"; rxrc=$?
  # A receiver that failed never ends the observation: its reader would wait forever.
  [ "$rxrc" = 0 ] || kill "$rd" 2>/dev/null
  wait "$rd"
  ringcap ring destroy -k "$key" >/dev/null 2>&1
  local line; line=$(grep '^send: bytes=' "$out")
  # The rate from bytes and seconds: the printed gbps has only three decimals.
  field() { echo "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; } # whole fields: not held_back_seconds
  local bytes secs gbps; bytes=$(field bytes); secs=$(field seconds)
  gbps=$(awk -v b="${bytes:-0}" -v s="${secs:-0}" 'BEGIN { if (s > 0) printf "%.4f", b * 8 / s / 1e9; else print 0 }')
  local wgbps; wgbps=$(window "$(cat "$out")")
  local rbytes; rbytes=$(sed -n 's/.*read: bytes=\([0-9]*\).*/\1/p' "$dlog")
  if [ "$rxrc" != 0 ] || ! echo "$line" | grep -q 'complete=true' || [ "${bytes:-0}" -le 0 ] || ! awk -v g="$gbps" -v w="$wgbps" 'BEGIN { exit !(g > 0 && w > 0) }' || [ "$rbytes" != "$bytes" ]; then
    echo "bench-rdma: ringcap $name failed (recv rc=$rxrc, sent ${bytes:-?}, read ${rbytes:-?}):" >&2
    cat "$out" "$rlog" "$dlog" >&2
    return 1
  fi
  echo "bench-rdma: ringcap $name bytes=$bytes gbps=$wgbps (window) whole_run_gbps=$gbps" >&2
  FLOW_RATES="$wgbps $gbps"
}

# ringcap MODE MR [SEND_FLAGS...]: recv on rxe1 into a fresh ring, a reader, send --no-fill for
# DUR seconds. Prints the rate in Gb/s over perftest's window, the busy vCPUs and context
# switches per second over that window (cpu_busy), and the rate over the whole run.
ringcap_run() {
  local mode=$1 mr=$2 port=$((PORT++)) key=b0$((PORT % 100))0
  shift 2
  ringcap ring create -k "$key" -n "$RING_NBUFS" -b "$RING_BUFSZ" >/dev/null 2>&1 || { echo "ring create failed" >&2; return 1; }
  rm -f recv.log # a previous run's "Listening" would start the sender before this receiver listens
  ringcap recv -k "$key" --mode "$mode" --mr "$mr" --qps "$QPS" --msg-bytes "$MSG" --listen "$SRV_IP:$port" \
    --metrics-addr "" --stop-observations 1 --summary-file summary.json "${BUSY[@]}" >recv.log 2>&1 &
  local rx=$!
  ringcap ring read -k "$key" -s >read.log 2>&1 &
  local rd=$!
  for _ in $(seq 100); do grep -q "Listening for senders" recv.log 2>/dev/null && break; sleep 0.1; done
  cpu_window cpu.log
  ringcap send --connect "$SRV_IP:$port" --mode "$mode" --qps "$QPS" --msg-bytes "$MSG" --duration "${DUR}s" --ack-timeout "$ACK_TIMEOUT" --no-fill --progress 100ms "${BUSY[@]}" "$@" >send.out 2>&1
  flow_end "mode=$mode mr=$mr" "$rx" "$rd" "$key" send.out recv.log read.log || return 1
  local wgbps gbps; read -r wgbps gbps <<<"$FLOW_RATES"
  echo "$wgbps $(cpu_busy cpu.log) $gbps"
}

# ringcap_concurrent: PerBlock and WholeRing at once, each its own ring, recv, reader and send
# with ringcap's defaults (QPS queue pairs each). Both flows share the vCPUs over the same
# window, so the phases of the emulated machine that make back-to-back runs differ by up to 1.5
# times hit both alike: the ratio of their rates is a much steadier per-run sample of what
# PerBlock costs against WholeRing. The two are set up and started in turn, PerBlock first
# every other run: the flow set up first has an edge (with WholeRing's ring, receiver and reader
# always first, 75 runs gave PerBlock/WholeRing 0.983, interval 0.960-0.995; alternating it,
# 1.019 and 0.993 in two benches of 75). Prints each flow's rate over the window, the
# busy vCPUs and context switches per second, and each flow's rate over its whole run:
# "WHOLE PER BUSY SWITCHES WHOLE_RUN PER_RUN".
ringcap_concurrent() {
  local mrs=(wholering perblock) i port key rx=() rd=() tx=() keys=() ports=() w=() r=() order=(0 1) bad=0
  [ $((run % 2)) = 1 ] || order=(1 0)
  for i in "${order[@]}"; do
    port=$((PORT++)) key=c0$((PORT % 100))$i
    keys[i]=$key ports[i]=$port
    ringcap ring create -k "$key" -n "$RING_NBUFS" -b "$RING_BUFSZ" >/dev/null 2>&1 || { echo "ring create failed" >&2; bad=1; }
    rm -f "recv$i.log" # as in ringcap_run
    ringcap recv -k "$key" --mode write --mr "${mrs[i]}" --qps "$QPS" --msg-bytes "$MSG" --listen "$SRV_IP:$port" \
      --metrics-addr "" --stop-observations 1 "${BUSY[@]}" >recv$i.log 2>&1 &
    rx[i]=$!
    ringcap ring read -k "$key" -s >read$i.log 2>&1 &
    rd[i]=$!
  done
  for i in 0 1; do
    for _ in $(seq 100); do grep -q "Listening for senders" "recv$i.log" 2>/dev/null && break; sleep 0.1; done
  done
  cpu_window cpu.log
  for i in "${order[@]}"; do
    ringcap send --connect "$SRV_IP:${ports[i]}" --mode write --qps "$QPS" --msg-bytes "$MSG" --duration "${DUR}s" --ack-timeout "$ACK_TIMEOUT" \
      --no-fill --progress 100ms "${BUSY[@]}" >send$i.out 2>&1 &
    tx[i]=$!
  done
  for i in 0 1; do wait "${tx[i]}"; done
  for i in 0 1; do
    if flow_end "concurrent ${mrs[i]}" "${rx[i]}" "${rd[i]}" "${keys[i]}" send$i.out recv$i.log read$i.log; then
      read -r "w[i]" "r[i]" <<<"$FLOW_RATES"
    else
      bad=1
    fi
  done
  [ "$bad" = 0 ] || return 1
  echo "${w[0]} ${w[1]} $(cpu_busy cpu.log) ${r[0]} ${r[1]}"
}

# The clock the guest times with (tsc, thanks to hack/vm/run.sh's tsc=reliable; the HPET would
# make every clock read an emulated MMIO access, which weighs on Go far more than on perftest).
echo "bench-rdma: guest clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" >&2
measure() { # contender
  case "$1" in
    ib_send_bw|ib_write_bw) perftest "$1" ;;
    ib_send_bw_pairs|ib_write_bw_pairs) perftest_pairs "${1%_pairs}" ;;
    send) ringcap_run send wholering ;;
    write) ringcap_run write wholering ;;
    send1) ringcap_run send wholering --post-threads 1 ;;
    write1) ringcap_run write wholering --post-threads 1 ;;
    perblock) ringcap_run write perblock ;;
  esac
}
fail=0
read -ra ORDER <<<"${CONTENDERS:-send1 ib_send_bw send ib_send_bw_pairs write1 ib_write_bw write perblock ib_write_bw_pairs concurrent}"
for run in $(seq "$RUNS"); do
  echo "bench-rdma: run $run of $RUNS (${DUR}s each, ${MSG}-byte messages, $QPS QPs, ringcap busy-poll=$BUSY_POLL)" >&2
  # Every compared pair runs back to back (each perftest sits between ringcap's one-thread and
  # default runs, write between ib_write_bw and perblock, send next to ib_send_bw_pairs;
  # ib_write_bw_pairs is one contender away from write), and every other run goes in reverse,
  # so neither side of a pair always goes first.
  order=("${ORDER[@]}")
  [ $((run % 2)) = 1 ] || for ((i = ${#ORDER[@]} - 1, j = 0; i >= 0; i--, j++)); do order[j]=${ORDER[i]}; done
  for k in "${order[@]}"; do
    # Every contender prints the window's rate, busy vCPUs and context switches per second;
    # ringcap's the whole run's rate too. concurrent is two flows: its results are named
    # concurrent_wholering and concurrent_perblock, each with the busy vCPUs and switches of both.
    if [ "$k" = concurrent ]; then
      if v=$(ringcap_concurrent); then
        read -r ww wp busy cs rw rp <<<"$v"
        for x in "concurrent_wholering $ww $rw" "concurrent_perblock $wp $rp"; do
          read -r n w whole <<<"$x"
          RES[$n]+=" $w" RES[$n.cpu]+=" $busy" RES[$n.cs]+=" $cs" RES[$n.whole]+=" $whole"
        done
      else
        fail=1
      fi
    elif v=$(measure "$k"); then
      read -r w busy cs whole <<<"$v"
      RES[$k]+=" $w" RES[$k.cpu]+=" $busy" RES[$k.cs]+=" $cs"
      [ -z "$whole" ] || RES[$k.whole]+=" $whole"
    else
      fail=1
    fi
  done
done
[ "$fail" = 0 ] || { echo "bench-rdma: a run failed" >&2; exit 1; }
# The rates of every run, in run order (the host pairs them by position, pools the boots and
# computes the medians, ratios and intervals: hack/capture/bench-rdma.sh).
for k in "${!RES[@]}"; do # ORDER's contenders (concurrent's two flows), their NAME.cpu and NAME.cs, and ringcap's NAME.whole
  echo "bench-rdma: runs $k${RES[$k]}"
done
