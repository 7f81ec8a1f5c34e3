#!/usr/bin/env bash
# Tears down what up.sh started, by recorded PID only: quits qemu (monitor "quit", then its PID),
# stops the control plane, deletes the tap and the etcd data. Safe to run twice or after a
# partial start; keeps the logs under $E2E_WORK/logs and $E2E_WORK/share/logs.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/common.sh"
stop_pid() { # name pidfile
  local name=$1 f=$2 p
  [ -f "$f" ] || return 0
  p=$(cat "$f")
  if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
    kill "$p" 2>/dev/null
    for _ in $(seq 40); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$p" 2>/dev/null && kill -9 "$p" 2>/dev/null
    log "stopped $name (pid $p)"
  fi
  rm -f "$f"
}
q=$E2E_WORK/pids/qemu.pid
qpid=$(cat "$q" 2>/dev/null || true)
if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
  # a clean quit first (qemu removes its pidfile), then the recorded PID
  echo quit | socat - UNIX-CONNECT:"$E2E_WORK/qemu-monitor.sock" >/dev/null 2>&1
  for _ in $(seq 20); do kill -0 "$qpid" 2>/dev/null || break; sleep 0.5; done
  if kill -0 "$qpid" 2>/dev/null; then echo "$qpid" > "$q"; stop_pid qemu "$q"; else log "stopped qemu (pid $qpid)"; fi
fi
rm -f "$q"
for n in kube-scheduler kube-controller-manager kube-apiserver etcd; do stop_pid $n "$E2E_WORK/pids/$n.pid"; done
if ip link show "$E2E_TAP" >/dev/null 2>&1; then ip link del "$E2E_TAP" && log "deleted tap $E2E_TAP"; fi
rm -rf "$E2E_WORK/etcd" "$E2E_WORK/guest-shell.sock" "$E2E_WORK/qemu-monitor.sock" "$E2E_WORK/e2e.env"
true
