#!/usr/bin/env bash
# Fetches the Debian kernel the Soft-RoCE VM boots (it ships rdma_rxe.ko) and unpacks it
# with `dpkg-deb -x` under $RINGCAP_VM_DIR/kernel. Nothing is installed into the host's boot
# setup: no postinst, no boot-loader hook. Idempotent: a second run only re-checks.
#
#   hack/vm/fetch-kernel.sh               # linux-image-amd64's current dependency
#   KPKG=linux-image-6.1.0-56-amd64 hack/vm/fetch-kernel.sh
#   RINGCAP_VM_KERNEL_SUITE=trixie hack/vm/fetch-kernel.sh   # another suite's kernel (6.12)
#
# Output: $RINGCAP_VM_DIR/kernel/{KVER,boot/vmlinuz-$KVER,lib/modules/$KVER}, or kernel-SUITE/
# with RINGCAP_VM_KERNEL_SUITE (see hack/vm/kernel-paths.sh). A suite other than the host's is
# read through a private apt state in $RINGCAP_VM_DIR/apt-SUITE (RINGCAP_VM_KERNEL_MIRROR,
# default http://deb.debian.org/debian, checked against debian-archive-keyring), refreshed
# when older than a day; the host's apt setup is not changed.
set -euo pipefail
cd "$(dirname "$0")/../.."
. hack/env.sh
. hack/vm/kernel-paths.sh
mkdir -p "$VM_DIR/debs"
exec 9>"$VM_DIR/.fetch.lock"
flock 9

APT=()
if [ -n "$VM_KERNEL_SUITE" ]; then
  A=$VM_DIR/apt-$VM_KERNEL_SUITE
  mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$A/parts"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${RINGCAP_VM_KERNEL_MIRROR:-http://deb.debian.org/debian} $VM_KERNEL_SUITE main" > "$A/sources.list"
  APT=(-o "Dir::Etc::SourceList=$A/sources.list" -o "Dir::Etc::SourceParts=$A/parts"
    -o "Dir::State::Lists=$A/lists" -o "Dir::Cache=$A/cache" -o APT::Sandbox::User=root)
  if [ -z "$(find "$A/lists" -maxdepth 1 -name '*_Packages*' -mtime -1 -print -quit)" ]; then
    echo "fetch-kernel: apt-get update ($VM_KERNEL_SUITE, private state in $A)"
    apt-get "${APT[@]}" -q update >/dev/null ||
      { echo "fetch-kernel: apt-get update of suite $VM_KERNEL_SUITE failed (see above)" >&2; exit 1; }
  fi
fi

# linux-image-amd64 is a meta package; its single "Depends: linux-image-<version>" is the kernel.
PKG=${KPKG:-$(apt-cache "${APT[@]}" depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')}
if [ -z "$PKG" ]; then
  echo "fetch-kernel: cannot resolve the kernel package from linux-image-amd64${VM_KERNEL_SUITE:+ in $VM_KERNEL_SUITE} (run apt-get update?)" >&2
  exit 1
fi
KVER=${PKG#linux-image-}
KDIR=$VM_KDIR
if [ -f "$KDIR/KVER" ] && [ "$(cat "$KDIR/KVER")" = "$KVER" ] && [ -f "$KDIR/boot/vmlinuz-$KVER" ]; then
  echo "fetch-kernel: $PKG already unpacked in $KDIR"
  exit 0
fi

# From Linux 7.x Debian splits the image: linux-image-KVER depends on linux-binary-KVER
# (vmlinuz), linux-modules-KVER and linux-base-KVER, which are unpacked with it.
PKGS=("$PKG" $(apt-cache "${APT[@]}" depends "$PKG" 2>/dev/null |
  awk -v v="$KVER" '$1 == "Depends:" && $2 ~ "^linux-(binary|modules|modules-extra|base)-" && substr($2, length($2) - length(v) + 1) == v {print $2}' | sort -u))
cd "$VM_DIR/debs"
rm -rf "$KDIR.tmp"
mkdir -p "$KDIR.tmp"
for p in "${PKGS[@]}"; do
  if ! ls "${p}"_*.deb >/dev/null 2>&1; then
    echo "fetch-kernel: apt-get download $p"
    apt-get "${APT[@]}" download "$p"
  fi
  dpkg-deb -x "$(ls "${p}"_*.deb | head -n1)" "$KDIR.tmp"
done
# trixie's packages ship the modules under /usr/lib/modules (merged /usr); bookworm's depmod
# and build-initramfs.sh read lib/modules.
if [ ! -d "$KDIR.tmp/lib/modules/$KVER" ] && [ -d "$KDIR.tmp/usr/lib/modules/$KVER" ]; then
  mkdir -p "$KDIR.tmp/lib/modules"
  mv "$KDIR.tmp/usr/lib/modules/$KVER" "$KDIR.tmp/lib/modules/$KVER"
fi
# 7.x keeps the image beside its modules (lib/modules/KVER/vmlinuz), 6.x in /boot.
if [ ! -f "$KDIR.tmp/boot/vmlinuz-$KVER" ] && [ -f "$KDIR.tmp/lib/modules/$KVER/vmlinuz" ]; then
  mkdir -p "$KDIR.tmp/boot"
  ln "$KDIR.tmp/lib/modules/$KVER/vmlinuz" "$KDIR.tmp/boot/vmlinuz-$KVER"
fi
[ -f "$KDIR.tmp/boot/vmlinuz-$KVER" ] || { echo "fetch-kernel: no vmlinuz of $KVER in ${PKGS[*]}" >&2; exit 1; }
depmod -b "$KDIR.tmp" "$KVER"
missing=0
# (crc32_generic, which 6.1's rxe needs, is optional: see build-initramfs.sh.)
for m in rdma_rxe ib_core ib_uverbs rdma_ucm veth macvlan 9p 9pnet_virtio virtio_pci; do
  if [ -z "$(find "$KDIR.tmp/lib/modules/$KVER" -name "$m.ko*" -print -quit)" ] &&
     ! grep -q "/$m\.ko\$" "$KDIR.tmp/lib/modules/$KVER/modules.builtin"; then
    echo "fetch-kernel: module $m missing from $PKG" >&2
    missing=1
  fi
done
[ "$missing" = 0 ] || exit 1
echo "$KVER" > "$KDIR.tmp/KVER"
rm -rf "$KDIR"
mv "$KDIR.tmp" "$KDIR"
echo "fetch-kernel: $PKG unpacked in $KDIR"
