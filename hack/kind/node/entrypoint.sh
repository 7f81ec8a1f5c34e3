#!/bin/bash
# The node container's entrypoint (ringcap's local kind node image): prepares what systemd and
# the kubelet need inside a privileged container, then execs its arguments (/sbin/init).
# Written for this image from what kind's node contract asks (systemd as PID 1, shared mounts,
# a fresh machine id and product uuid per node, the kubelet's cgroup roots on cgroup v1).
set -euo pipefail
say() { echo "ringcap-kind-entrypoint: $*" >&2; }

# mounts made inside the node (kubelet volumes, containerd snapshots) must reach its containers
mount --make-rshared /
# systemd must not try to manage the host's devices or sysfs
mount -o remount,ro /sys || say "cannot remount /sys read-only (continuing)"

# every node gets its own identity (kubeadm and the kubelet read both)
rm -f /etc/machine-id && systemd-machine-id-setup >/dev/null
[ -s /kind/product_uuid ] || cat /proc/sys/kernel/random/uuid > /kind/product_uuid
for f in /sys/class/dmi/id/product_uuid /sys/devices/virtual/dmi/id/product_uuid; do
  [ -f "$f" ] && mount -o ro,bind /kind/product_uuid "$f"
done

# cgroup v1 (with a private cgroup namespace): the kubelet's cgroup root (/kubelet, with the
# systemd driver kubelet.slice) must exist in every hierarchy and be a mount of its own, as the
# container's root is; cgroup v2 needs nothing here (kubelet.slice is a systemd unit).
if [ ! -f /sys/fs/cgroup/cgroup.controllers ]; then
  say "detected cgroup v1" # kind waits for this line (or systemd's multi-user target) before it execs
  mount --make-rprivate /sys/fs/cgroup
  while read -r dir; do
    for sub in kubelet kubelet.slice; do
      mkdir -p "$dir/$sub"
      if [ "${dir##*/}" = cpuset ]; then
        cat "$dir/cpuset.cpus" > "$dir/$sub/cpuset.cpus"; cat "$dir/cpuset.mems" > "$dir/$sub/cpuset.mems"
      fi
      mount --bind "$dir/$sub" "$dir/$sub"
    done
  done < <(findmnt -lun -t cgroup -o target)
fi

# iptables: use the back end that already holds rules in this network namespace (the runtime's
# port mappings), nft when neither does; kube-proxy's image and the CNI plugins follow the node
legacy=$( (iptables-legacy-save; ip6tables-legacy-save) 2>/dev/null | grep -c '^-' || true)
nft=$( (timeout 5 iptables-nft-save; timeout 5 ip6tables-nft-save) 2>/dev/null | grep -c '^-' || true)
mode=nft; [ "$legacy" -gt "$nft" ] && mode=legacy
update-alternatives --set iptables "/usr/sbin/iptables-$mode" >/dev/null
update-alternatives --set ip6tables "/usr/sbin/ip6tables-$mode" >/dev/null
echo "$mode" > /kind/iptables-mode
say "iptables $mode; starting $*"
exec "$@"
