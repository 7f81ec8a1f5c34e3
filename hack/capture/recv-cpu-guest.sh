#!/bin/bash
# Guest side of hack/capture/recv-cpu.sh (@ROUNDS@ and @BYTES@ are filled in).
set -u
cp ringcap-old ringcap-new /tmp/ && chmod +x /tmp/ringcap-old /tmp/ringcap-new
ROUNDS=@ROUNDS@ BYTES=@BYTES@ port=19000 key=7e10
/tmp/ringcap-new ring create -k $key -n 8 -b 4194304 >/dev/null
for round in $(seq "$ROUNDS"); do
  for mode in send write; do
    order="old new"; [ $((round % 2)) -eq 0 ] && order="new old"
    for v in $order; do
      port=$((port + 1))
      /tmp/ringcap-new ring read -k $key -s >/dev/null 2>&1 &
      rd=$!
      bash -c '"$@" >/tmp/recv.log 2>&1; times' _ /tmp/ringcap-$v recv -k $key --mode $mode --qps 4 \
        --listen 198.18.0.2:$port --metrics-addr "" --stop-observations 1 >/tmp/times.txt &
      rp=$!
      for _ in $(seq 100); do (exec 3<>/dev/tcp/198.18.0.2/$port) 2>/dev/null && break; sleep 0.1; done
      if ! /tmp/ringcap-$v send --connect 198.18.0.2:$port --bytes "$BYTES" --mode $mode --qps 4 >/tmp/send.log 2>&1; then
        echo "recv-cpu: send failed"; cat /tmp/send.log /tmp/recv.log; exit 1
      fi
      wait $rp; wait $rd
      # shellcheck disable=SC2046 # two words: the children's user and sys time
      set -- $(sed -n 2p /tmp/times.txt) # no process substitution: the guest has no /dev/fd
      user=${1:-?} sys=${2:-?}
      echo "recvcpu round=$round mode=$mode bin=$v user=$user sys=$sys $(grep -o 'gbps=[0-9.]*' /tmp/send.log | head -1)"
    done
  done
done
/tmp/ringcap-new ring destroy -k $key >/dev/null
