#!/bin/bash
# The kubelet's ExecStartPre: its cgroup root (/kubelet, kubelet.slice with the systemd driver)
# must offer every controller the kubelet checks for (cpu, cpuset, memory, pids, ...).
#   cgroup v2: systemd enables only the controllers its own settings ask for, so enable all that
#   the node's root offers in /, /kubelet and /kubelet.slice (systemd, PID 1, already sits in
#   init.scope, so the root has no processes of its own and accepts the write)
#   cgroup v1: the entrypoint bind-mounted the roots; the named systemd hierarchy needs /kubelet
set -euo pipefail
C=/sys/fs/cgroup
if [ -f $C/cgroup.controllers ]; then
  for g in "" /kubelet /kubelet.slice; do
    mkdir -p "$C$g"
    for c in $(cat "$C$g/cgroup.controllers"); do echo "+$c" > "$C$g/cgroup.subtree_control"; done
  done
else
  mkdir -p $C/systemd/kubelet
fi
