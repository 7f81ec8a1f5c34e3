#!/bin/bash
# Runs in the Soft-RoCE VM of `make e2e-kind-vm` (guest-boot.sh runs it as /mnt/host/guest-node.sh,
# after the mounts, modules and rxe0/rxe1 are up): the VM's disk (ext4, made by kind-vm.sh) holds
# podman's storage with ringcap's kind node image in it; kind.sh up with the podman provider
# (the cluster's API server published on the VM's tap address). Writes /mnt/host/kind/up.rc (0 or
# the failing status) for the host, logs to /mnt/host/logs.
set -u
export PATH=/mnt/host/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
. /mnt/host/node.env
log() { echo "kind-guest[$(cut -d' ' -f1 /proc/uptime)s] $*"; }
L=/mnt/host/logs; mkdir -p $L /mnt/host/kind
# the share is mounted cache=loose: sync, so that the host, which stops the VM once it sees
# up.rc, has every log line first; up.rc itself appears whole (written aside, then renamed: the
# host saw a created but still empty up.rc and took it for a failure)
rc=1; trap 'sync; echo $rc > /mnt/host/kind/up.rc.tmp; sync; mv /mnt/host/kind/up.rc.tmp /mnt/host/kind/up.rc; sync' EXIT
for m in virtio_blk ext4; do modprobe $m || log "modprobe $m failed"; done
mkdir -p /mnt/disk /run/cdi
for _ in $(seq 20); do [ -b /dev/vda ] && break; sleep 0.5; done
mount -t ext4 /dev/vda /mnt/disk || { log "mounting the VM's disk failed"; exit; }
export RINGCAP_CACHE=/mnt/disk/ringcap KIND_WORK=/mnt/host/kind KIND_ENGINE=podman KIND_CLUSTER=$KIND_CLUSTER \
  KIND_IMAGES_DIR=/mnt/host/images KIND_API_ADDRESS=$E2E_GUEST_IP KIND_SHARE_CDI=1 KIND_KUBEADM_TIMEOUT=15m0s \
  KIND_PODMAN_ULIMITS="nofile=1048576:1048576 memlock=-1:-1"
. /mnt/host/repo/hack/kind/env.sh
# the disk comes with the node image in podman's storage (kind-vm.sh disk_template)
node_image() { . /mnt/host/repo/hack/kind/podman-env.sh && kind_podman_env && podman image exists "$KIND_NODE_IMAGE"; }
( node_image ) > $L/podman-image.log 2>&1 || { log "node image $KIND_NODE_IMAGE not on the VM's disk: $(tail -3 $L/podman-image.log)"; exit; }
log "node image $KIND_NODE_IMAGE on the VM's disk; kind.sh up"
# the host reads how much memory the run needed (uptime, MiB used, buff/cache, available) from
# here, from before the cluster is made to the end
( while sleep 30; do echo "$(cut -d' ' -f1 /proc/uptime) $(free -m | awk '/^Mem:/ {print $3, $6, $7}')"; done ) >> $L/memory.log 2>&1 &
# and where the guest's CPU goes: every minute the load and the 12 processes (the node's too:
# they share the guest's kernel) with the most CPU time so far
( while sleep 60; do echo "--- $(cut -d' ' -f1 /proc/uptime) load $(cut -d' ' -f1-3 /proc/loadavg)"
  ps -eo cputime,pcpu,rss,args --sort=-cputime | head -13 | cut -c1-160; done ) >> $L/cpu.log 2>&1 &
KIND_CIDR_WAIT=1200 KIND_SYSTEM_WAIT=1200 bash /mnt/host/repo/test/e2e/harness/kind.sh up > $L/kind-up.log 2>&1
rc=$?
log "kind.sh up rc=$rc; memory $(free -m | awk '/^Mem:/ {print $3 " MiB used, " $7 " MiB available of " $2}')"
