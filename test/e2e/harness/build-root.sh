#!/usr/bin/env bash
# Builds the guest of the e2e cluster: the Debian kernel (unpacked from its package, no hook runs on
# this host), a small initramfs that switch_roots into a 9p-exported Debian bookworm root, and that
# root (debootstrap minbase + containerd, runc, CNI plugins, iptables, rdma-core, perftest) with the
# kernel's full module tree hard-linked in. Idempotent; a second run only re-checks.
#
#   test/e2e/harness/build-root.sh   # -> $E2E_WORK/{initramfs.cpio.gz,root}; kernel: hack/vm/fetch-kernel.sh
# Env: E2E_WORK (default /var/tmp/ringcap/e2e), MIRROR (default: the Debian mirror this host's apt uses),
# E2E_ROOT_EXTRA_PKGS (more packages, e.g. podman for the kind path's own root, kind-vm.sh).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/common.sh"
# The Debian archive this host's apt already uses (deb822 .sources or one-line sources.list).
host_mirror() {
  { grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}'
    grep -hE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '{print $2}'
  } | grep -E '/debian/?$' | head -n1 || true
}
MIRROR=${MIRROR:-$(host_mirror)}
[ -n "$MIRROR" ] || die "no Debian mirror found in this host's apt sources: set MIRROR"
mkdir -p "$E2E_WORK"

# --- kernel: Debian bookworm's own (ships rdma_rxe), fetched and unpacked by the VM harness ---
"$HERE/../../../hack/vm/fetch-kernel.sh" >&2
KDIR=${RINGCAP_VM_DIR:-$RINGCAP_CACHE/vm}/kernel
KVER=$(cat "$KDIR/KVER")
MD=$KDIR/lib/modules/$KVER

# --- initramfs: busybox + the 9p/virtio module closure; /init switch_roots into the 9p root ---
if [ ! -s "$E2E_WORK/initramfs.cpio.gz" ] || [ "$HERE/build-root.sh" -nt "$E2E_WORK/initramfs.cpio.gz" ]; then
  R=$E2E_WORK/initramfs-root; rm -rf "$R"
  mkdir -p "$R"/{bin,sbin,proc,sys,dev,newroot,lib/modules/"$KVER"}
  cp /bin/busybox "$R/bin/busybox"
  for a in sh mount mkdir switch_root modprobe insmod cat echo sleep; do ln -s busybox "$R/bin/$a"; done
  ln -s ../bin/busybox "$R/sbin/modprobe"
  for m in virtio_pci 9pnet_virtio 9p; do
    line=$(grep -E "/$m\.ko(\.[a-z]+)?:" "$MD/modules.dep") || die "module $m not in $MD/modules.dep"
    for p in $(echo "$line" | tr -d ':'); do install -D -m 0644 "$MD/$p" "$R/lib/modules/$KVER/$p"; done
  done
  cp "$MD"/modules.order "$MD"/modules.builtin "$MD"/modules.builtin.modinfo "$R/lib/modules/$KVER/"
  depmod -b "$R" "$KVER"
  cat > "$R/init" <<'EOS'
#!/bin/sh
# ringcap e2e initramfs: mount the 9p root (tag "root") and hand over to /mnt/host/guest-boot.sh
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
for m in virtio_pci 9pnet_virtio 9p; do modprobe $m || echo "e2e-init: modprobe $m failed"; done
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=loose root /newroot || { echo "e2e-init: 9p root mount failed"; sleep 5; echo o > /proc/sysrq-trigger; }
mkdir -p /newroot/mnt/host
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=loose host /newroot/mnt/host || echo "e2e-init: share mount failed"
for d in proc sys dev; do mount --move /$d /newroot/$d; done
exec switch_root /newroot /bin/bash /mnt/host/guest-boot.sh
EOS
  chmod 0755 "$R/init"
  (cd "$R" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 > "$E2E_WORK/initramfs.cpio.gz.tmp"
  mv "$E2E_WORK/initramfs.cpio.gz.tmp" "$E2E_WORK/initramfs.cpio.gz"
  log "initramfs $(du -h "$E2E_WORK/initramfs.cpio.gz" | cut -f1)"
fi

# --- root: debootstrap minbase + the node's packages (no service starts in the chroot) ---
ROOT=$E2E_WORK/root
PKGS="containerd runc containernetworking-plugins iptables conntrack socat ethtool rdma-core ibverbs-providers
      ibverbs-utils perftest rdmacm-utils libfabric1 kmod iproute2 mount util-linux procps curl ca-certificates psmisc libgcc-s1 ${E2E_ROOT_EXTRA_PKGS:-}"
# The marker holds the package list: a root made for another list gets the missing packages.
# shellcheck disable=SC2086
if [ "$(cat "$ROOT/.ringcap-root-ok" 2>/dev/null)" != "$(echo $PKGS)" ]; then
  if [ ! -x "$ROOT/usr/bin/dpkg" ]; then
    rm -rf "$ROOT"
    debootstrap --variant=minbase bookworm "$ROOT" "$MIRROR" > "$E2E_WORK/debootstrap.log" 2>&1 ||
      { tail -20 "$E2E_WORK/debootstrap.log"; die "debootstrap failed (log $E2E_WORK/debootstrap.log)"; }
  fi
  printf '#!/bin/sh\nexit 101\n' > "$ROOT/usr/sbin/policy-rc.d"; chmod +x "$ROOT/usr/sbin/policy-rc.d"
  cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
  # shellcheck disable=SC2086
  chroot "$ROOT" sh -c "apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(echo $PKGS)" \
    > "$E2E_WORK/apt-root.log" 2>&1 || { tail -20 "$E2E_WORK/apt-root.log"; die "apt in the guest root failed"; }
  rm -f "$ROOT"/var/cache/apt/archives/*.deb
  echo vm > "$ROOT/etc/hostname"
  printf '127.0.0.1 localhost\n' > "$ROOT/etc/hosts"
  printf 'nameserver 10.203.0.1\n' > "$ROOT/etc/resolv.conf"   # nothing answers; the kubelet only copies it
  [ -s "$ROOT/etc/machine-id" ] || od -An -tx1 -N16 /dev/urandom | tr -d ' \n' > "$ROOT/etc/machine-id"
  # shellcheck disable=SC2086
  echo $PKGS > "$ROOT/.ringcap-root-ok"
  log "guest root ready ($(du -sh "$ROOT" | cut -f1))"
fi
# full module tree (hard links into the unpacked kernel: no extra disk) so modprobe finds everything
if [ ! -d "$ROOT/lib/modules/$KVER/kernel" ]; then
  rm -rf "$ROOT/lib/modules/$KVER"; mkdir -p "$ROOT/lib/modules"
  cp -al "$MD" "$ROOT/lib/modules/$KVER"
fi
mkdir -p "$ROOT/mnt/host" "$ROOT/opt/k8s/bin" "$ROOT/opt/ringcap/bin"
