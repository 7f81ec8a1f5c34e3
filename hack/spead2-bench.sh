#!/usr/bin/env bash
# Comparison benchmark of `ringcap recv --protocol spead` against spead2_recv, SARAO's SPEAD
# receiver (manual; not part of CI; needs hack/spead2-build.sh's build in $RINGCAP_CACHE/spead2).
# One spead2_send stream over UDP on loopback into each receiver in turn, both with the same
# socket buffer (net.core.rmem_max, what spead2_recv can get without privileges):
#   rate: the highest loss-free rate, stepping spead2_send's --rate through RATES (Gb/s);
#     loss-free is every heap complete in spead2_recv, every byte placed and no kernel drop in
#     ringcap; each step prints the rate the sender reached, which falls short of a step above
#     the sender's ceiling (it shares the CPUs with the receiver, so that ceiling is higher
#     beside a receiver that takes less CPU); the report gives the highest step and, below it,
#     the rate the sender reached in that step;
#   cpu: the receiver process's CPU seconds (user + system) per GiB received at CPU_RATE,
#     counted from the moment the sender starts (start-up and ring creation left out), over a
#     stream of CPU_HEAPS heaps (the CPU clock counts in 10 ms ticks: 512 MiB is ~0.6 s).
# Each of ROUNDS rounds measures both receivers; the script prints the median of each and the
# ratio ringcap/spead2_recv: the median and range of the rounds' ratios.
# ringcap's ring is drained by `ringcap ring read` into /dev/null, whose CPU is not counted;
# spead2_recv assembles each heap in memory and drops it.
#
#   hack/spead2-bench.sh [SPEAD2_CHECKOUT]    (with a checkout it builds first)
#   ROUNDS=1 HEAPS=256 CPU_HEAPS=256 RATES="0.5 1" hack/spead2-bench.sh    (smoke size)
#   RECV_FLAGS=--hugepages hack/spead2-bench.sh    (ringcap's ring in huge pages: set
#     vm.nr_hugepages to at least the ring's 32 MiB first)
#   VETH=1 hack/spead2-bench.sh    (over a veth pair instead of the loopback: the sender in one
#     network namespace the script creates, the receivers in another, 10.213.0.1 -> .2; the
#     namespaces are deleted on exit; root)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] && hack/spead2-build.sh "$1"
. hack/env.sh
KEY=${BENCH_KEY:-5a54}
RECV_FLAGS=${RECV_FLAGS:-}
PORT=${SPEAD2_PORT:-7152}
ROUNDS=${ROUNDS:-5}
HEAP=${HEAP:-65536}
HEAPS=${HEAPS:-2048}
CPU_HEAPS=${CPU_HEAPS:-8192}
RATES=${RATES:-0.25 0.5 1 2 4 8}
CPU_RATE=${CPU_RATE:-0.5}
BUF=$(sysctl -n net.core.rmem_max)
VETH=${VETH:-}
DST=127.0.0.1
NS_SEND=rcbench-send-$$ NS_RECV=rcbench-recv-$$
B=$RINGCAP_CACHE/spead2
R=$B/ringcap
if [ ! -x "$B/spead2_send" ] || [ ! -x "$B/spead2_recv" ]; then
  echo "no spead2 build in \$RINGCAP_CACHE/spead2: run hack/spead2-build.sh SPEAD2_CHECKOUT" >&2
  exit 1
fi
work=$(mktemp -d)
cleanup() {
  local rc=$?
  local p
  for p in $(jobs -p); do pkill -TERM -P "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  "$R" ring destroy -k "$KEY" >/dev/null 2>&1 || true
  if [ -n "$VETH" ]; then ip netns del "$NS_SEND" 2>/dev/null || true; ip netns del "$NS_RECV" 2>/dev/null || true; fi
  if [ -n "${KEEP_WORK:-}" ]; then echo "work: $work"; else rm -rf "$work"; fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# With VETH, IN_RECV and IN_SEND run a command in the receivers' and the sender's network
# namespace (`ip netns exec` execs it, so PIDs stay as without them).
IN_RECV=() IN_SEND=()
veth() { # the two namespaces and the veth pair between them; DST the receivers' address
  ip netns add "$NS_SEND"
  ip netns add "$NS_RECV"
  ip link add rcb-send netns "$NS_SEND" type veth peer name rcb-recv netns "$NS_RECV"
  ip -n "$NS_SEND" addr add 10.213.0.1/24 dev rcb-send
  ip -n "$NS_RECV" addr add 10.213.0.2/24 dev rcb-recv
  ip -n "$NS_SEND" link set rcb-send up
  ip -n "$NS_RECV" link set rcb-recv up
  ip netns exec "$NS_RECV" sysctl -qw net.core.rmem_max="$BUF" 2>/dev/null || true # per namespace on newer kernels
  DST=10.213.0.2 IN_RECV=(ip netns exec "$NS_RECV") IN_SEND=(ip netns exec "$NS_SEND")
}
bound() { # wait until something listens on UDP port $1; else show the receiver's log $2
  for _ in $(seq 1 100); do
    [ -n "$("${IN_RECV[@]}" ss -Huln "sport = :$1")" ] && return 0
    sleep 0.1
  done
  echo "nothing listens on UDP port $1: $(tail -3 "$2")" >&2
  return 1
}
limit() { awk -v h="$HEAP" -v n="$HEAPS" -v r="$1" 'BEGIN { printf "%d", h * n * 8 / (r * 1e9) * 3 + 10 }'; }
send() { # spead2_send at $1 Gb/s (in the background, so that a signal's trap runs at once); prints the rate it reached
  "${IN_SEND[@]}" "$B/spead2_send" --heaps "$HEAPS" --heap-size "$HEAP" --items 1 --rate "$1" "$DST:$PORT" >"$work/send.log" 2>&1 &
  wait $! || true
  sed -n 's/.* seconds, \([0-9.e+-]*\) Gb\/s$/\1/p' "$work/send.log"
}
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; } # CPU clock ticks of process $1 so far
# cpu TIMEFILE TICKS: the CPU seconds /usr/bin/time measured less those before the stream
cpu() { awk -v t="$2" -v hz="$(getconf CLK_TCK)" '{ printf "%.3f", $1 + $2 - t / hz }' "$1"; }

# trial_spead2 RATE: prints "LOSSFREE CPU_SECONDS BYTES SENT_GBPS"
trial_spead2() {
  /usr/bin/time -f "%U %S" -o "$work/time" timeout -s INT "$(limit "$1")" \
    "${IN_RECV[@]}" "$B/spead2_recv" --quiet --buffer "$BUF" "$DST:$PORT" >"$work/srecv.log" 2>&1 &
  local pid=$! sent ok=0 heaps t0
  bound "$PORT" "$work/srecv.log"
  t0=$(ticks "$(pgrep -P "$(pgrep -P "$pid")")") # time's child is timeout, whose child is spead2_recv
  send "$1" >"$work/sent"
  sent=$(cat "$work/sent")
  wait "$pid" || true
  heaps=$(sed -n 's/^Received \([0-9]*\) heaps$/\1/p' "$work/srecv.log")
  grep -qx "incomplete_heaps_evicted: 0" "$work/srecv.log" && [ "${heaps:-0}" = "$HEAPS" ] && ok=1
  echo "$ok $(cpu "$work/time" "$t0") $((${heaps:-0} * HEAP)) $sent"
}

# trial_ringcap RATE: prints "LOSSFREE CPU_SECONDS BYTES SENT_GBPS"
trial_ringcap() {
  local bytes=$((HEAPS * HEAP)) pid reader sent ok=0 got drops t0
  rm -f "$work/summary.json"
  /usr/bin/time -f "%U %S" -o "$work/time" "${IN_RECV[@]}" "$R" recv -k "$KEY" --create -b 4194304 -n 8 \
    --metrics-addr "" --drain-timeout 10s --protocol spead --udp-ports "$PORT" \
    --udp-address "$DST" --udp-buffer "$BUF" --spead-timestamp-id 0x1 --spead-timestamp-step 1 \
    --spead-heap-bytes "$HEAP" --spead-sync-time "$(date +%s)" --spead-sample-rate 1000 --stop-bytes "$bytes" --stop-duration "$(limit "$1")s" \
    --summary-file "$work/summary.json" $RECV_FLAGS 2>"$work/rrecv.log" &
  pid=$!
  bound "$PORT" "$work/rrecv.log"
  "$R" ring read -k "$KEY" --wait 10s -s -o /dev/null 2>/dev/null &
  reader=$!
  sleep 0.3
  t0=$(ticks "$(pgrep -P "$pid")")
  send "$1" >"$work/sent"
  sent=$(cat "$work/sent")
  wait "$pid" || true
  wait "$reader" || true
  got=$(jq -r '.packets.receivedBytes // 0' "$work/summary.json" 2>/dev/null || echo 0)
  drops=$(jq -r '.packets.kernelDrops // 1' "$work/summary.json" 2>/dev/null || echo 1)
  [ "$got" = "$bytes" ] && [ "$drops" = 0 ] && ok=1
  [ "$ok" = 1 ] || echo "  ringcap lost data: $(jq -c '.packets' "$work/summary.json" 2>/dev/null || tail -2 "$work/rrecv.log")" >&2
  echo "$ok $(cpu "$work/time" "$t0") $got $sent"
}

# highest RECEIVER: the highest loss-free rate of RATES, stepping up (0 when none), into $best,
# and the rate the sender reached in that trial into $reached (the sender shares the host's
# CPUs with the receiver, so its ceiling depends on the receiver's CPU: a step above the
# ceiling asks one receiver for more than the other)
highest() {
  local r ok c b s
  best=0 reached=0
  for r in $RATES; do
    "trial_$1" "$r" >"$work/trial"
    read -r ok c b s <"$work/trial"
    echo "  $1 at $r Gb/s: lossfree=$ok sent=${s:-?} Gb/s"
    [ "$ok" = 1 ] || break
    best=$r reached=${s:-0}
  done
}

# perGiB RECEIVER: CPU seconds per GiB at CPU_RATE into $per (nan when the trial lost data)
perGiB() {
  local ok c b s HEAPS=$CPU_HEAPS # the trials see this HEAPS
  "trial_$1" "$CPU_RATE" >"$work/trial"
  read -r ok c b s <"$work/trial"
  echo "  $1 at $CPU_RATE Gb/s: lossfree=$ok cpu=${c}s bytes=$b"
  per=nan
  if [ "$ok" = 1 ]; then per=$(awk -v c="$c" -v b="$b" 'BEGIN { printf "%.4f", c / (b / 1073741824) }'); fi
}

stats() { # median and range of the numbers on stdin, as "median min max"
  sort -g | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%g %g %g\n", m, v[1], v[NR] }'
}

go build -o "$R" ./cmd/ringcap
[ -z "$VETH" ] || veth
echo "spead2 bench${VETH:+ over veth}: $ROUNDS rounds, $HEAPS heaps of $HEAP bytes, rates $RATES Gb/s, cpu at $CPU_RATE Gb/s over $CPU_HEAPS heaps, socket buffer $BUF"
: >"$work/rounds"
for i in $(seq 1 "$ROUNDS"); do
  echo "round $i"
  highest spead2; rs=$best ss=$reached
  highest ringcap; rr=$best sr=$reached
  perGiB spead2; cs=$per
  perGiB ringcap; cr=$per
  echo "$rs $rr $cs $cr $ss $sr" | tee -a "$work/rounds"
done
col() { awk -v c="$1" '$c != "nan" { print $c }' "$work/rounds"; }
ratio() { awk -v a="$1" -v b="$2" '$a != "nan" && $b != "nan" && $b > 0 { print $a / $b }' "$work/rounds"; }
report() { # NAME UNIT SPEAD2_COL RINGCAP_COL
  local s r q
  s=$(col "$3" | stats); r=$(col "$4" | stats); q=$(ratio "$4" "$3" | stats)
  printf '%-28s spead2_recv %s  ringcap %s  (median, min..max over rounds; %s)\n' "$1" \
    "$(echo "$s" | awk '{ print $1 " [" $2 ".." $3 "]" }')" "$(echo "$r" | awk '{ print $1 " [" $2 ".." $3 "]" }')" "$2"
  printf '%-28s ratio ringcap/spead2_recv %s (median and range of the rounds'"'"' ratios: each pairs trials a few seconds apart, which a slow phase of the host moves alike)\n' "" \
    "$(echo "$q" | awk '{ if (NF == 3) printf "%.3g [%.3g..%.3g]", $1, $2, $3; else print "nan" }')"
}
report "highest loss-free rate" "Gb/s" 1 2
report "  as the sender reached it" "Gb/s" 5 6
report "CPU per GiB at $CPU_RATE Gb/s" "CPU s/GiB" 3 4
