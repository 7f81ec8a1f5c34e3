#!/bin/sh
# /init of the Soft-RoCE VM (busybox sh; installed by hack/vm/build-initramfs.sh).
#  1. mounts proc/sys/dev/tmpfs, the host share (9p tag "host") on /mnt/host and, when
#     given, the repository (9p tag "src", read-only) on /mnt/src;
#  2. sets up Soft-RoCE: veth0 (198.18.0.1) <-> veth1 (198.18.0.2), rxe0 on veth0 and rxe1 on
#     veth1, with the policy routing two rxe devices in one namespace need;
#  3. runs the script named by the kernel argument ringcap.run=<path relative to the share>
#     with bash, cwd = the share, as root, RINGCAP_VM=1; writes its exit status to
#     /mnt/host/.exit-status (read by hack/vm/run.sh), or starts a shell (ringcap.shell);
#  4. powers the VM off.
export PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root
export RINGCAP_VM=1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs tmpfs /run
say() { echo "ringcap-vm: $* [$(cut -d' ' -f1 /proc/uptime)s]"; }
say "init started"

for m in virtio_pci 9pnet_virtio 9p; do modprobe $m || say "modprobe $m failed"; done
P9="trans=virtio,version=9p2000.L,msize=262144"
if ! mount -t 9p -o "$P9,cache=loose" host /mnt/host; then
  say "FATAL: cannot mount the host share (qemu -virtfs ... mount_tag=host)"
  poweroff -f
fi
if grep -qw ringcap.src /proc/cmdline; then
  mount -t 9p -o "$P9,ro" src /mnt/src || say "cannot mount the source tree (mount_tag=src)"
fi
ip link set lo up

rxe_setup() {
  IP=/usr/sbin/ip   # iproute2, not the busybox applet (no "type veth" there)
  # crc32_generic first, on kernels that have it: rdma_rxe then needs the crc32 shash (see
  # build-initramfs.sh).
  if grep -q '/crc32_generic\.ko' "/lib/modules/$(uname -r)/modules.dep"; then
    modprobe crc32_generic || { say "modprobe crc32_generic failed"; return 1; }
  fi
  for m in rdma_rxe rdma_ucm ib_uverbs ib_umad veth; do modprobe $m || { say "modprobe $m failed"; return 1; }; done
  # No IPv6 duplicate address detection: the link-local GIDs are usable at once.
  for c in all default; do echo 0 > /proc/sys/net/ipv6/conf/$c/accept_dad; done
  $IP link add veth0 type veth peer name veth1 || return 1
  for d in veth0 veth1; do $IP link set $d mtu 9000 && $IP link set $d up || return 1; done
  $IP addr add 198.18.0.1/24 dev veth0 && $IP addr add 198.18.0.2/24 dev veth1 || return 1
  # Both ends are in one namespace: force locally generated traffic to each address out of
  # the *other* veth (otherwise it short-cuts over lo, and rxe drops what arrives on lo),
  # and accept packets whose source is a local address.
  $IP rule add pref 10 iif lo to 198.18.0.2 lookup 100 &&
    $IP route add 198.18.0.2 dev veth0 src 198.18.0.1 table 100 &&
    $IP rule add pref 10 iif lo to 198.18.0.1 lookup 101 &&
    $IP route add 198.18.0.1 dev veth1 src 198.18.0.2 table 101 &&
    $IP rule add pref 20 lookup local &&
    $IP rule del pref 0 lookup local || return 1
  for i in all default veth0 veth1; do
    echo 0 > /proc/sys/net/ipv4/conf/$i/rp_filter
    echo 1 > /proc/sys/net/ipv4/conf/$i/accept_local
  done
  rdma link add rxe0 type rxe netdev veth0 && rdma link add rxe1 type rxe netdev veth1 || return 1
  # Wait until both ports are ACTIVE and have their IPv4 GID (index 1 on rxe).
  n=0
  for d in rxe0 rxe1; do
    until grep -q ACTIVE /sys/class/infiniband/$d/ports/1/state 2>/dev/null &&
      grep -q ffff:c612 /sys/class/infiniband/$d/ports/1/gids/1 2>/dev/null; do
      n=$((n + 1)); [ $n -lt 300 ] || { say "$d not ready after 30s"; return 1; }
      sleep 0.1
    done
  done
}
if grep -qw ringcap.norxe /proc/cmdline; then
  say "rxe setup skipped (ringcap.norxe)"
elif rxe_setup; then
  say "rxe0 (veth0 198.18.0.1) and rxe1 (veth1 198.18.0.2) ready"
else
  say "FATAL: Soft-RoCE setup failed"; dmesg | tail -20
  echo 125 > /mnt/host/.exit-status; sync; poweroff -f
fi

RUN=; SHELL_WANTED=
for a in $(cat /proc/cmdline); do
  case "$a" in
    ringcap.run=*) RUN=${a#ringcap.run=} ;;
    ringcap.shell) SHELL_WANTED=1 ;;
  esac
done
if [ -n "$RUN" ]; then
  say "running $RUN"
  (cd /mnt/host && exec /usr/bin/bash "/mnt/host/$RUN")
  rc=$?
  echo $rc > /mnt/host/.exit-status
  say "$RUN exited rc=$rc"
elif [ -n "$SHELL_WANTED" ]; then
  (cd /mnt/host && setsid cttyhack /usr/bin/bash -l)
fi
sync
say "powering off"
poweroff -f
