#!/usr/bin/env bash
# make bench-rdma: ringcap recv/send against perftest on the same Soft-RoCE link, in ONE boot
# of the VM (hack/vm): 64 KiB messages, 4 QPs, the median of RUNS runs of DUR seconds each,
# interleaved so that load drift hits every contender alike. Prints
#   ratio send/ib_send_bw=…   ratio write/ib_write_bw=…   ratio perblock/wholering=…
# (goals: >= 0.95, >= 0.95, >= 0.98) and, for each, a distribution-free interval for that
# median (does it settle the goal?). Settings: RUNS (7), DUR (6, at least 5: perftest leaves out DUR/4 whole seconds at each end), MSG (65536), QPS (4),
# ACK_TIMEOUT (18, both contenders' local ACK timeout exponent), BUSY_POLL (0; 1 runs ringcap's
# recv and send with --busy-poll, polling for completions as perftest does).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
. hack/env.sh
VM_DIR=${RINGCAP_VM_DIR:-$RINGCAP_CACHE/vm}
mkdir -p "$VM_DIR/runs"
SHARE=$(mktemp -d "$VM_DIR/runs/bench-rdma-$(date +%Y%m%d-%H%M%S)-XXXX")
chmod 0755 "$SHARE"
mkdir -p "$SHARE/bin"
echo "bench-rdma: go build bin/ringcap (cgo)"
CGO_ENABLED=1 go build -o "$SHARE/bin/ringcap" ./cmd/ringcap
{
  echo "export RUNS=${RUNS:-7} DUR=${DUR:-6} MSG=${MSG:-65536} QPS=${QPS:-4} ACK_TIMEOUT=${ACK_TIMEOUT:-18} BUSY_POLL=${BUSY_POLL:-0}"
  cat hack/capture/bench-rdma-guest.sh
} > "$SHARE/bench-rdma-guest.sh"
rc=0
RINGCAP_VM_SHARE=$SHARE hack/vm/run.sh "$SHARE/bench-rdma-guest.sh" | tee "$SHARE/bench.log" || rc=$?
echo "---- bench-rdma (log: $SHARE/bench.log)"
grep -E '^(bench-rdma: (median|interval)|ratio )' "$SHARE/bench.log" | tr -d '\r' || true
exit "$rc"
