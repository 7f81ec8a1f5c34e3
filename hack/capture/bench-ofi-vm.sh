#!/usr/bin/env bash
# make bench-ofi, VM half: on the same Soft-RoCE link (hack/vm), in one boot, 64 KiB messages,
# 4 endpoints / queue pairs, write mode, the senders unfilled, RUNS runs of DUR seconds each, the
# order rotating (guest half: bench-ofi-vm-guest.sh):
#   verbs      ringcap over raw verbs;
#   ofi-verbs  ringcap over libfabric's verbs;ofi_rxm;
#   ofi-floor  hack/capture/ofifloor (C, built here with cc against libfabric-dev): fi_writedata
#              of the same messages and blocks over verbs;ofi_rxm and nothing else, the floor of
#              what libfabric's layer costs on this link;
#   with FLOOR_LENMSG=1 also ofi-floor-len: ofifloor with ringcap's length messages;
#   with FLOOR_THREADS=1 also ofi-floor-mt: ofifloor's writer with a thread per endpoint.
# Prints each run's figures and then, each as <median of the per-run ratios> [min, max],
#   ratio ofi-verbs/verbs=…     (goal >= 0.90)
#   ratio ofi-floor/verbs=…     libfabric's floor against ringcap over raw verbs
#   ratio ofi-verbs/ofi-floor=… ringcap's adapter against that floor
#   (ratio ofi-floor-len/ofi-floor=… with FLOOR_LENMSG=1, ratio ofi-floor-mt/ofi-floor=…,
#   ratio ofi-floor-mt/verbs=… and ratio ofi-verbs/ofi-floor-mt=… with FLOOR_THREADS=1)
# and each contender's CPU per GiB moved (user+sys of the sending and the receiving process),
# the bytes per packet that left rxe0's netdev (veth0) while it ran, and ofifloor's sending CPU
# per GiB during its stream alone (without libfabric's start-up).
# Under TCG the emulator's speed swings 1.5-2x between phases of a boot: the rotation lets the
# contenders see them alike. Settings: RUNS (5), DUR (6 seconds), MSG (65536), QPS (4),
# FLOOR_LENMSG (0), FLOOR_THREADS (0), SENDER_THREADS (posting thread counts, e.g. "1 4": also
# ofi-verbs-tN, ringcap's ofi sender with N posting threads pinned to the vCPUs in turn),
# OFI_ENVS (libfabric settings to weigh in the same boot, each NAME=VALUE[,NAME=VALUE...], e.g.
# "FI_OFI_RXM_BUFFER_SIZE=16384": also ofi-verbs-eN, ringcap over verbs;ofi_rxm with the Nth
# setting in both processes' environment, and `ratio ofi-verbs-eN/ofi-verbs`).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
. hack/env.sh
VM_DIR=${RINGCAP_VM_DIR:-$RINGCAP_CACHE/vm}
RUNS=${RUNS:-5} FLOOR_LENMSG=${FLOOR_LENMSG:-0} FLOOR_THREADS=${FLOOR_THREADS:-0} SENDER_THREADS=${SENDER_THREADS:-}
[ -f /usr/include/rdma/fi_rma.h ] || { echo "bench-ofi: libfabric's headers are missing (apt-get install libfabric-dev)" >&2; exit 1; }
mkdir -p "$VM_DIR/runs"
SHARE=$(mktemp -d "$VM_DIR/runs/bench-ofi-$(date +%Y%m%d-%H%M%S)-XXXX")
chmod 0755 "$SHARE"
mkdir -p "$SHARE/bin"
echo "bench-ofi: go build ringcap (cgo) and cc ofifloor for the VM"
CGO_ENABLED=1 go build -o "$SHARE/bin/ringcap" ./cmd/ringcap
cc -O2 -Wall -Wextra -Werror -pthread -o "$SHARE/bin/ofifloor" hack/capture/ofifloor/ofifloor.c -lfabric
{
  echo "export RUNS=$RUNS DUR=${DUR:-6} MSG=${MSG:-65536} QPS=${QPS:-4} FLOOR_LENMSG=$FLOOR_LENMSG FLOOR_THREADS=$FLOOR_THREADS SENDER_THREADS='$SENDER_THREADS' OFI_ENVS='${OFI_ENVS:-}'"
  cat hack/capture/bench-ofi-vm-guest.sh
} >"$SHARE/bench-ofi-vm-guest.sh"
RINGCAP_VM_SHARE=$SHARE hack/vm/run.sh "$SHARE/bench-ofi-vm-guest.sh" | tee "$SHARE/bench.log"
tr -d '\r' <"$SHARE/bench.log" >"$SHARE/bench.txt"
# runs: "RUN CONTENDER GBPS" for every contender of every completed run.
sed -n 's/^bench-ofi-vm: run \([0-9]*\) \(.*\)$/\1 \2/p' "$SHARE/bench.txt" |
  awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); print $1, kv[1], kv[2] } }' >"$SHARE/runs"
# cpu: "CONTENDER SEND-CPU-PER-GIB RECV-CPU-PER-GIB" for every run.
sed -n 's/^bench-ofi-vm: cpu run=[0-9]* contender=\([^ ]*\) bytes=\([0-9]*\) send=\([0-9.]*\) recv=\([0-9.]*\)$/\1 \2 \3 \4/p' "$SHARE/bench.txt" |
  awk '$2 > 0 { g = $2 / 2^30; printf "%s %.3f %.3f\n", $1, $3 / g, $4 / g }' >"$SHARE/cpu"
n=$(awk '$2 == "verbs"' "$SHARE/runs" | wc -l)
[ "$n" = "$RUNS" ] || { echo "bench-ofi: $n of $RUNS runs in the VM completed (see $SHARE/bench.log)" >&2; exit 1; }

# summary: "MEDIAN [MIN, MAX]" of the numbers on stdin (nothing without any).
summary() {
  sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) exit; m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%.3f [%.3f, %.3f]", m, v[1], v[NR] }'
}

# ratio NUM DEN: the summary of the per-run ratios NUM/DEN of their Gb/s.
ratio() {
  awk -v a="$1" -v b="$2" '$2 == a { x[$1] = $3 } $2 == b { y[$1] = $3 }
    END { for (r in x) if ((r in y) && y[r] > 0) print x[r] / y[r] }' "$SHARE/runs" | summary
}

# gbps C and cpu C COLUMN: the summaries of contender C's Gb/s and CPU per GiB (2 send, 3 recv).
gbps() { awk -v c="$1" '$2 == c { print $3 }' "$SHARE/runs" | summary; }
cpu() { awk -v c="$1" -v k="$2" '$1 == c { print $k }' "$SHARE/cpu" | summary; }

about="median, min and max of $n runs in one boot, the order rotating; 64 KiB messages, 4 endpoints, write mode, rxe"
echo "ratio ofi-verbs/verbs=$(ratio ofi-verbs verbs) ($about)"
echo "ratio ofi-floor/verbs=$(ratio ofi-floor verbs) (libfabric's floor, ofifloor over verbs;ofi_rxm, against ringcap over raw verbs)"
echo "ratio ofi-verbs/ofi-floor=$(ratio ofi-verbs ofi-floor) (ringcap over verbs;ofi_rxm against that floor)"
[ "$FLOOR_LENMSG" = 1 ] && echo "ratio ofi-floor-len/ofi-floor=$(ratio ofi-floor-len ofi-floor) (the floor with ringcap's length messages against the floor)"
if [ "$FLOOR_THREADS" = 1 ]; then
  echo "ratio ofi-floor-mt/ofi-floor=$(ratio ofi-floor-mt ofi-floor) (the floor's writer with a thread per endpoint against the floor)"
  echo "ratio ofi-floor-mt/verbs=$(ratio ofi-floor-mt verbs) (the floor's writer with a thread per endpoint against ringcap over raw verbs)"
  echo "ratio ofi-verbs/ofi-floor-mt=$(ratio ofi-verbs ofi-floor-mt) (ringcap over verbs;ofi_rxm against the floor with a thread per endpoint)"
fi
for t in $SENDER_THREADS; do
  echo "ratio ofi-verbs-t$t/verbs=$(ratio "ofi-verbs-t$t" verbs) (ringcap over verbs;ofi_rxm with $t posting threads, pinned to the vCPUs in turn, against ringcap over raw verbs)"
done
i=0
for e in ${OFI_ENVS:-}; do
  echo "ratio ofi-verbs-e$i/ofi-verbs=$(ratio "ofi-verbs-e$i" ofi-verbs) (ringcap over verbs;ofi_rxm with $e against ringcap's defaults)"
  echo "ratio ofi-verbs-e$i/verbs=$(ratio "ofi-verbs-e$i" verbs) (the same against ringcap over raw verbs)"
  i=$((i + 1))
done
contenders=$(awk '{ print $2 }' "$SHARE/runs" | awk '!seen[$1]++')
for c in $contenders; do
  pkt=$(sed -n "s/^bench-ofi-vm: wire run=[0-9]* contender=$c packets=\([0-9]*\) bytes=\([0-9]*\)\$/\1 \2/p" "$SHARE/bench.txt" |
    awk '$1 > 0 { print $2 / $1 }' | summary)
  echo "bench-ofi: $c Gb/s $(gbps "$c"); CPU-s per GiB send $(cpu "$c" 2) recv $(cpu "$c" 3); bytes per packet on veth0 $pkt"
done
for k in "lenmsg=0 threads=0" "lenmsg=1 threads=0" "lenmsg=0 threads=1"; do
  s=$({ grep "^bench-ofi-vm: ofifloor send: .* $k " "$SHARE/bench.txt" || true; } | tr ' ' '\n' | awk -F= '
    { v[$1] = $2 } $1 == "threads" && v["bytes"] > 0 { print (v["stream_user"] + v["stream_sys"]) / (v["bytes"] / 2^30) }' | summary)
  [ -n "$s" ] && echo "bench-ofi: ofifloor $k sending CPU-s per GiB during the stream alone $s"
done
true
