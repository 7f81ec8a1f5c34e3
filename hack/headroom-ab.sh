#!/usr/bin/env bash
# The headroom benchmarks (make bench-headroom) of two builds, alternating in one run, pinned
# to HEADROOM_CPU: OLD (a git revision) and the working tree. Prints each round's figures and,
# last, per figure the CPU time per operation of the new build against the old one
# (hack/headroomab: `ratio NAME-new/NAME-old=MEDIAN [LO, HI]`, below 1 cheaper).
#
#   OLD=50a18bc ROUNDS=5 hack/headroom-ab.sh          # make bench-headroom-ab OLD=50a18bc
# Env: OLD (required), ROUNDS (default 5), HEADROOM_RUN (default: 64 KiB send and 1 MiB write, receiver and sender;
#      set it in the environment, not as a make argument, where make eats its $),
#      HEADROOM_CPU (default 1), GOMAXPROCS for the benchmarks (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/env.sh
: "${OLD:?OLD=<git revision> to compare against}"
ROUNDS=${ROUNDS:-5}
RUN=${HEADROOM_RUN:-'TestHeadroom/(recv-send|send-send)/64KiB-qps4$|TestHeadroom/(recv-write|send-write)/1MiB-qps4$'}
CPU=${HEADROOM_CPU:-1}
tmp=$(mktemp -d)
cleanup() { git worktree remove --force "$tmp/old" >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT
git worktree add -q --detach "$tmp/old" "$OLD"
(cd "$tmp/old" && go test -c -tags headroom -o "$tmp/old.test" ./pkg/capture/benchfabric)
go test -c -tags headroom -o "$tmp/new.test" ./pkg/capture/benchfabric
for i in $(seq "$ROUNDS"); do
  for b in old new; do
    echo "== $b round $i"
    GOMAXPROCS=${GOMAXPROCS:-1} taskset -c "$CPU" "$tmp/$b.test" -test.run "$RUN" -test.benchtime 1s -test.timeout 20m | grep '^headroom' || true
  done
done | tee "$tmp/ab.log"
go run ./hack/headroomab < "$tmp/ab.log"
