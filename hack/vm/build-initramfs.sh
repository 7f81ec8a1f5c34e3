#!/usr/bin/env bash
# Builds the Soft-RoCE VM's whole root filesystem as one small initramfs:
# busybox-static, plus bash, rdma-core, perftest, libfabric, iproute2 and util-linux binaries copied from
# the host (Debian bookworm, the guest's userspace too) with their shared-library closure
# (ldd), the librxe provider, the kernel modules rxe/veth/9p/virtio need (closure from
# modules.dep), and hack/vm/guest-init.sh as /init.
# Needs hack/vm/fetch-kernel.sh first. Skips the build when its inputs did not change.
# The modules come from the fetched kernel package (compressed ones are unpacked: busybox's
# modprobe loads plain .ko files); ones built into that kernel are skipped.
#
# Output: $RINGCAP_VM_DIR/initramfs.cpio.gz, or initramfs-SUITE.cpio.gz for the kernel of
# RINGCAP_VM_KERNEL_SUITE (see hack/vm/kernel-paths.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
. hack/env.sh
. hack/vm/kernel-paths.sh
HERE=$PWD/hack/vm
KROOT=$VM_KDIR
OUT=$VM_INITRD
[ -f "$KROOT/KVER" ] || { echo "build-initramfs: no kernel in $KROOT: run hack/vm/fetch-kernel.sh" >&2; exit 1; }
KVER=$(cat "$KROOT/KVER")

# Host binaries the guest gets (full versions win over busybox applets: PATH has /usr first).
BINS=(
  /usr/bin/bash
  /usr/bin/ibv_devinfo /usr/bin/ibv_devices /usr/bin/ibv_rc_pingpong /usr/bin/ibv_ud_pingpong
  /usr/bin/ib_write_bw /usr/bin/ib_send_bw /usr/bin/ib_read_bw
  /usr/bin/ib_write_lat /usr/bin/ib_send_lat /usr/bin/ib_read_lat
  /usr/bin/rping /usr/bin/rdma /usr/sbin/ip /usr/sbin/tc
  /usr/bin/ipcs /usr/bin/ipcrm /usr/bin/prlimit /usr/bin/setpriv /usr/bin/timeout
  # fi_info brings libfabric and its closure: ringcap and the capture tests link libfabric.
  /usr/bin/fi_info
)
PROVIDERS=(/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so)
# glibc dlopens libgcc_s (pthread_exit/cancel); the rest are commonly linked by test programs.
EXTRA_LIBS=(/lib/x86_64-linux-gnu/libgcc_s.so.1 /lib/x86_64-linux-gnu/libpthread.so.0
  /lib/x86_64-linux-gnu/libdl.so.2 /lib/x86_64-linux-gnu/librt.so.1 /lib/x86_64-linux-gnu/libm.so.6
  /lib/x86_64-linux-gnu/libresolv.so.2)
# Modules (with their modules.dep closure). crc32_generic: rxe needs the "crc32" shash and on
# Debian it is a module; without it `rdma link add` fails with "No such file or directory".
# macvlan: an upper device of a veth with RoCE GIDs of its own (the Attachment-mode test).
# sch_netem: loss, duplication and reordering injected between two namespaces (packet ingest).
MODS="crc32_generic crc32-pclmul rdma_rxe rdma_ucm ib_uverbs ib_umad veth dummy macvlan sch_netem 9p 9pnet_virtio virtio_pci virtio_net"
# Left out where the kernel has no such module: from Linux 6.15 rxe computes its ICRC with the
# crc32 library and the crc32 crypto modules are gone (trixie-backports' 7.x).
OPTIONAL_MODS="crc32_generic crc32-pclmul"

for b in "${BINS[@]}" "${PROVIDERS[@]}" /bin/busybox /etc/libibverbs.d/rxe.driver; do
  [ -e "$b" ] || { echo "build-initramfs: missing on the host: $b (run hack/setup.sh)" >&2; exit 1; }
done

# Skip when nothing changed: the stamp is a hash of this script, the init, the kernel version
# and the host binaries' identities.
stamp=$( { cat "$0" "$HERE/guest-init.sh" "$HERE/guest-unprivileged.sh"; echo "$KVER";
  ls -lL --time-style=+%s "${BINS[@]}" "${PROVIDERS[@]}" /bin/busybox; } | sha256sum | cut -d' ' -f1)
if [ -f "$OUT" ] && [ "$(cat "$OUT.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "build-initramfs: $OUT is up to date"
  exit 0
fi

mkdir -p "$VM_DIR"
exec 9>"$VM_DIR/.initramfs.lock"
flock 9
R=$(mktemp -d "$VM_DIR/initramfs-root.XXXXXX")
chmod 0755 "$R"
trap 'rm -rf "$R"' EXIT
mkdir -p "$R"/{bin,sbin,usr/bin,usr/sbin,usr/lib,usr/lib64,usr/local/bin,etc,proc,sys,dev,tmp,run,mnt/host,mnt/src,root,var/tmp}
ln -s usr/lib "$R/lib"
ln -s usr/lib64 "$R/lib64"   # merged /usr, as on bookworm

copy_with_libs() {
  local f=$1 l
  install -D -m 0755 "$(readlink -f "$f")" "$R$f"
  ldd "$f" 2>/dev/null | awk '/=> \//{print $3} /^\t\/lib64/{print $1}' | while read -r l; do
    [ -e "$R$l" ] || install -D -m 0755 "$(readlink -f "$l")" "$R$l"
  done
}
for b in "${BINS[@]}" "${PROVIDERS[@]}"; do copy_with_libs "$b"; done
for l in "${EXTRA_LIBS[@]}"; do
  [ -e "$l" ] && [ ! -e "$R$l" ] && install -D -m 0755 "$(readlink -f "$l")" "$R$l"
done
# libibverbs finds its providers through the .driver files.
install -D -m 0644 /etc/libibverbs.d/rxe.driver "$R/etc/libibverbs.d/rxe.driver"

cp /bin/busybox "$R/bin/busybox"
for a in $("$R/bin/busybox" --list); do
  [ -e "$R/bin/$a" ] || [ -e "$R/usr/bin/$a" ] || [ -e "$R/usr/sbin/$a" ] || ln -s busybox "$R/bin/$a"
done
ln -sf /usr/bin/bash "$R/bin/bash"
# The kernel runs /sbin/modprobe to autoload modules (e.g. crypto-crc32 for rxe).
ln -sf ../bin/busybox "$R/sbin/modprobe"

MD=$KROOT/lib/modules/$KVER
for m in $MODS; do
  line=$(grep -E "/$m\.ko(\.[a-z]+)?:" "$MD/modules.dep" || true)
  if [ -z "$line" ]; then
    grep -qE "/$m\.ko\$" "$MD/modules.builtin" && continue   # built in (virtio_pci on 6.12)
    case " $OPTIONAL_MODS " in *" $m "*) continue ;; esac
    echo "build-initramfs: module $m neither in modules.dep nor built into $KVER" >&2; exit 1
  fi
  echo "$line" | tr -d ':' | tr ' ' '\n'
done | sort -u | while read -r p; do
  [ -n "$p" ] || continue
  install -D -m 0644 "$MD/$p" "$R/lib/modules/$KVER/$p"
  case "$p" in
    *.ko.xz) xz -d "$R/lib/modules/$KVER/$p" ;;
    *.ko.zst) zstd -q -d --rm "$R/lib/modules/$KVER/$p" ;;
    *.ko.gz) gzip -d "$R/lib/modules/$KVER/$p" ;;
  esac
done
cp "$MD"/modules.order "$MD"/modules.builtin "$MD"/modules.builtin.modinfo "$R/lib/modules/$KVER/"
depmod -b "$R" "$KVER"

install -m 0755 "$HERE/guest-init.sh" "$R/init"
install -m 0755 "$HERE/guest-unprivileged.sh" "$R/usr/local/bin/ringcap-vm-unprivileged"
# Debian's busybox-static prefers its applets inside busybox sh even over PATH: busybox sh
# scripts that need iproute2's ip must source this (bash scripts do not need it).
cat > "$R/etc/ringcap-vm.sh" <<'EOS'
ip() { /usr/sbin/ip "$@"; }
ipcs() { /usr/bin/ipcs "$@"; }
ipcrm() { /usr/bin/ipcrm "$@"; }
EOS
echo ". /etc/ringcap-vm.sh" > "$R/etc/profile"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' > "$R/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$R/etc/group"

(cd "$R" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "$stamp" > "$OUT.stamp"
echo "build-initramfs: $OUT ($(du -h "$OUT" | cut -f1), $(find "$R" | wc -l) entries, kernel $KVER)"
