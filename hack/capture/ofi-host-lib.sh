# shellcheck shell=bash
# Sourced by bench-ofi-host.sh and ofi-cpu-host.sh: one ringcap capture over libfabric's
# tcp;ofi_rxm on the host's loopback into a fresh ring that a reader drains.

freeport() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# stop_pid PID: stops PID and its children (a /usr/bin/time's command) and reaps it.
stop_pid() {
  pkill -TERM -P "$1" 2>/dev/null || true
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# wait_for PID SECONDS: waits for PID to exit (its status), or stops it after SECONDS (1).
wait_for() {
  for _ in $(seq $((10 * $2))); do
    kill -0 "$1" 2>/dev/null || { wait "$1"; return; }
    sleep 0.1
  done
  stop_pid "$1"
  return 1
}

# ofi_capture RC KEY OUT TIMED SEND-FLAGS...: ring KEY of 8 blocks of 16 messages per endpoint
# (MSG, QPS), a `ring read -s` draining it, `RC recv` in write mode and `RC send` with SEND-FLAGS;
# with TIMED set, their user and system seconds go to OUT/recv.time and OUT/send.time. The
# sender's summary is in OUT/send.out. A capture that fails stops what it started (by PID),
# destroys the ring, prints the logs and returns 1: it never waits for a receiver that cannot
# finish.
ofi_capture() {
  local rc=$1 key=$2 out=$3 timed=$4 port reader recv
  shift 4
  local tr=() ts=()
  if [ -n "$timed" ]; then
    tr=(/usr/bin/time -f '%U %S' -o "$out/recv.time") ts=(/usr/bin/time -f '%U %S' -o "$out/send.time")
  fi
  port=$(freeport)
  "$rc" ring create -k "$key" -b $((4 * MSG * 16)) -n 8 >/dev/null 2>"$out/create.log" || { cat "$out/create.log" >&2; return 1; }
  "$rc" ring read -k "$key" -s 2>"$out/read.log" & reader=$!
  "${tr[@]}" "$rc" recv -k "$key" --transport ofi --ofi-provider 'tcp;ofi_rxm' --ofi-domain lo --listen "127.0.0.1:$port" \
    --mode write --qps "$QPS" --msg-bytes "$MSG" --stop-observations 1 --metrics-addr '' 2>"$out/recv.log" & recv=$!
  for _ in $(seq 100); do grep -q 'Listening for senders' "$out/recv.log" && break; sleep 0.1; done
  if "${ts[@]}" "$rc" send --connect "127.0.0.1:$port" --transport ofi --ofi-domain lo --no-fill -q "$@" \
    >"$out/send.out" 2>"$out/send.log" && grep -q 'complete=true' "$out/send.out" &&
    wait_for "$recv" 60 && wait_for "$reader" 60; then
    "$rc" ring destroy -k "$key" >/dev/null
    return 0
  fi
  stop_pid "$recv"
  stop_pid "$reader"
  "$rc" ring destroy -k "$key" >/dev/null 2>&1 || true
  echo "ofi capture failed; sender, its log, the receiver's log:" >&2
  cat "$out/send.out" "$out/send.log" "$out/recv.log" >&2
  return 1
}
