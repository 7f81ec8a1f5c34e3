#!/bin/bash
# Guest side of hack/capture/recv-cpu.sh (@ROUNDS@ and @BYTES@ are filled in). Per round and
# mode, three receivers in turn: ringcap recv of the old and of the new build, and perftest's
# receiving end (ib_send_bw's server, ib_write_bw's passive server), each timed with bash
# `times`; one `recvcpu …` line per run. A perftest run that fails is reported and the rest go
# on (the script then exits 1); a ringcap run that fails ends the script.
set -u
cp ringcap-old ringcap-new /tmp/ && chmod +x /tmp/ringcap-old /tmp/ringcap-new
ROUNDS=@ROUNDS@ BYTES=@BYTES@ PROFILE=@PROFILE@ SOFTIRQ=@SOFTIRQ@ NEW_ENV='@NEW_ENV@' port=19000 key=7e10 fail=0
PRE=() # a prefix for the receiver's command: perf record in the softirq runs
# ringcap's defaults with 4 QPs: 64 KiB messages in both modes. perftest's -n counts
# iterations per queue pair.
MSG=65536 QPS=4 ACK_TIMEOUT=18
ITERS=$((BYTES / MSG / QPS))
/tmp/ringcap-new ring create -k $key -n 8 -b 4194304 >/dev/null

# cpu_of FILE: "user=… sys=…", the timed children's line of bash `times` in FILE.
cpu_of() {
  # shellcheck disable=SC2046 # two words: the children's user and sys time
  set -- $(sed -n 2p "$1") # no process substitution: the guest has no /dev/fd
  echo "user=${1:-?} sys=${2:-?}"
}

# ringcap_run MODE BIN: ringcap recv of build BIN (old, new) takes BYTES from the same build's
# send, a `ring read -s` draining the ring. Exits the script when the transfer fails.
ringcap_run() {
  local mode=$1 v=$2 rp rd prof=() envs=()
  port=$((port + 1))
  # NEW_ENV: VAR=VALUE words in the new build's receiver's environment
  [ "$v" != new ] || [ -z "$NEW_ENV" ] || read -ra envs <<<"$NEW_ENV"
  # PROFILE=1: the new build's receiver writes a Go CPU profile into the share (cwd)
  [ "$PROFILE" != 1 ] || [ "$v" != new ] || prof=(--cpuprofile "$PWD/recv-new-$mode-$round.pprof")
  /tmp/ringcap-new ring read -k $key -s >/dev/null 2>&1 &
  rd=$!
  bash -c '"$@" >/tmp/recv.log 2>&1; times' _ "${PRE[@]}" env "${envs[@]}" "/tmp/ringcap-$v" recv -k $key --mode "$mode" --qps $QPS \
    --listen 198.18.0.2:$port --metrics-addr "" --stop-observations 1 "${prof[@]}" >/tmp/times.txt &
  rp=$!
  for _ in $(seq 100); do (exec 3<>/dev/tcp/198.18.0.2/$port) 2>/dev/null && break; sleep 0.1; done
  if ! "/tmp/ringcap-$v" send --connect 198.18.0.2:$port --bytes "$BYTES" --mode "$mode" --qps $QPS >/tmp/send.log 2>&1; then
    echo "recv-cpu: send failed"; cat /tmp/send.log /tmp/recv.log; exit 1
  fi
  wait $rp; wait $rd
  echo "recvcpu round=$round mode=$mode bin=$v $(cpu_of /tmp/times.txt) $(grep -o 'gbps=[0-9.]*' /tmp/send.log | head -1)"
}

# perftest_run MODE: ib_MODE_bw, server (the receiving end) on rxe1, client on rxe0, out-of-band
# TCP on 127.0.0.1 as in bench-rdma-guest.sh; 4 QPs, 64 KiB messages, ITERS iterations per QP
# (BYTES in all), the same local ACK timeout as ringcap's. ib_send_bw sleeps on completion
# events at both ends (-e; ringcap does not busy-poll either); ib_write_bw refuses -e ("Events
# feature not available on WRITE verb"), so its client polls, and its server is passive: it
# posts and polls nothing, so its CPU is setup plus what the kernel charges it while rxe places
# the data. The server is timed like ringcap recv. Returns 1 (logs printed) unless every
# message moved (perftest reports iterations over all QPs).
perftest_run() {
  local mode=$1 tool=ib_${1}_bw srv line iters gbps ev=(-e)
  [ "$mode" = send ] || ev=()
  port=$((port + 1))
  rm -f /tmp/srv.pid
  bash -c '"$@" >/tmp/srv.log 2>&1 & echo $! >/tmp/srv.pid; wait $!; times' _ \
    "${PRE[@]}" "$tool" -d rxe1 -x 1 -s $MSG -q $QPS -n $ITERS -u $ACK_TIMEOUT -F "${ev[@]}" -p $port >/tmp/times.txt &
  srv=$!
  # Wait for its out-of-band listener without connecting to it (it takes the first connection).
  for _ in $(seq 200); do netstat -ltn 2>/dev/null | grep -q ":$port " && break; sleep 0.1; done
  if ! timeout 600 "$tool" -d rxe0 -x 1 -s $MSG -q $QPS -n $ITERS -u $ACK_TIMEOUT -F "${ev[@]}" -p $port 127.0.0.1 >/tmp/cli.log 2>&1; then
    echo "recv-cpu: $tool client failed"; cat /tmp/cli.log /tmp/srv.log
    [ -s /tmp/srv.pid ] && kill "$(cat /tmp/srv.pid)" 2>/dev/null
    wait $srv
    return 1
  fi
  wait $srv
  # Data lines: #bytes #iterations BW_peak BW_average[MB/s] MsgRate; which end prints one
  # depends on the test, so the line with the most iterations counts.
  line=$(cat /tmp/cli.log /tmp/srv.log | awk -v m=$MSG '$1 == m && NF >= 5 && $2 + 0 > best { best = $2 + 0; l = $0 } END { print l }')
  iters=$(echo "$line" | awk '{ print $2 }')
  if [ "${iters:-0}" != $((ITERS * QPS)) ]; then
    echo "recv-cpu: $tool moved ${iters:-no} messages of $((ITERS * QPS))"; cat /tmp/cli.log /tmp/srv.log
    return 1
  fi
  gbps=$(echo "$line" | awk '{ printf "%.3f", $4 * 1048576 * 8 / 1e9 }')
  echo "recvcpu round=$round mode=$mode bin=perftest $(cpu_of /tmp/times.txt) gbps=$gbps"
}

for round in $(seq "$ROUNDS"); do
  for mode in send write; do
    # old and new alternate which goes first; perftest takes the first, second and third
    # place in turn.
    pair=(old new); [ $((round % 2)) -eq 0 ] && pair=(new old)
    case $(((round - 1) % 3)) in
      0) order=(perftest "${pair[@]}") ;;
      1) order=("${pair[0]}" perftest "${pair[1]}") ;;
      2) order=("${pair[@]}" perftest) ;;
    esac
    for v in "${order[@]}"; do
      if [ "$v" = perftest ]; then
        perftest_run "$mode" || fail=1
      else
        ringcap_run "$mode" "$v"
      fi
    done
  done
done
# softirq_share FILE: the share of perf samples in FILE taken in softirq context (a call chain
# through __do_softirq): the kernel's network and rxe work, which this kernel (no
# CONFIG_IRQ_TIME_ACCOUNTING) charges to whichever process the CPU was running; "FRAC SAMPLES".
softirq_share() {
  ./perf/perf script -i "$1" -F ip,sym 2>/dev/null | awk '
    /^[[:space:]]*$/ { if (inblk) { n++; s += soft }; inblk = 0; soft = 0; next }
    { inblk = 1; if ($0 ~ /__do_softirq|handle_softirqs/) soft = 1 }
    END { if (inblk) { n++; s += soft }; if (n) printf "%.4f %d\n", s / n, n; else print "0 0" }'
}

# SOFTIRQ=1: one more run of each receiver under perf record (cpu-clock, kernel call chains), for
# the share of its CPU that was softirq work charged to it.
if [ "$SOFTIRQ" = 1 ]; then
  export LD_LIBRARY_PATH=$PWD/perf/lib
  round=softirq
  for mode in send write; do
    for v in new old perftest; do
      PRE=(./perf/perf record -q -e cpu-clock -F 999 -g -o /tmp/softirq.data --)
      if [ "$v" = perftest ]; then
        perftest_run "$mode" >/dev/null || fail=1
      else
        ringcap_run "$mode" "$v" >/dev/null
      fi
      PRE=()
      read -r frac samples <<<"$(softirq_share /tmp/softirq.data)"
      echo "recvsoftirq mode=$mode bin=$v share=$frac samples=$samples"
      rm -f /tmp/softirq.data
    done
  done
fi
/tmp/ringcap-new ring destroy -k $key >/dev/null
exit $fail
