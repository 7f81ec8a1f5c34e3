#!/usr/bin/env bash
# `make e2e`: brings up the e2e cluster (up.sh), runs the client-go suite in test/e2e against it
# and ALWAYS tears it down (down.sh), on success, failure or interrupt. On failure it prints the
# tail of every component log first. KEEP=1 leaves the cluster running for debugging
# (. $E2E_WORK/e2e.env; kubectl ...; then make e2e-down).
# Env: E2E_RUN (go test -run filter; default the suite, ^TestRingcap$, not the benchmarks), E2E_TIMEOUT (go test -timeout, default 50m).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/common.sh"
rc=1
finish() {
  if [ "$rc" != 0 ]; then
    for f in "$E2E_WORK"/logs/*.log "$E2E_WORK"/share/logs/*.log "$E2E_WORK/serial.log"; do
      [ -s "$f" ] || continue; echo "----- tail $f"; tail -n 25 "$f"
    done >&2
  fi
  if [ -z "${KEEP:-}" ]; then "$HERE/down.sh"; else log "KEEP=1: cluster left running; make e2e-down stops it"; fi
  log "e2e $([ "$rc" = 0 ] && echo PASSED || echo FAILED)"
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM
# compile the suite before spending two minutes on the cluster
(cd "$REPO_ROOT" && go test -tags e2e -c -o "$E2E_WORK/e2e.test" ./test/e2e) || exit 1
"$HERE/up.sh" || exit 1
. "$E2E_WORK/e2e.env"
cd "$REPO_ROOT/test/e2e" && "$E2E_WORK/e2e.test" -test.v -test.count=1 -test.timeout "${E2E_TIMEOUT:-50m}" -test.run "${E2E_RUN:-^TestRingcap\$}"
rc=$?
