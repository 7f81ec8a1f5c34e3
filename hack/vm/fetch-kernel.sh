#!/usr/bin/env bash
# Fetches the Debian kernel the Soft-RoCE VM boots (it ships rdma_rxe.ko) and unpacks it
# with `dpkg-deb -x` under $RINGCAP_VM_DIR/kernel. Nothing is installed into the host's boot
# setup: no postinst, no boot-loader hook. Idempotent: a second run only re-checks.
#
#   hack/vm/fetch-kernel.sh               # linux-image-amd64's current dependency
#   KPKG=linux-image-6.1.0-56-amd64 hack/vm/fetch-kernel.sh
#
# Output: $RINGCAP_VM_DIR/kernel/{KVER,boot/vmlinuz-$KVER,lib/modules/$KVER}
set -euo pipefail
cd "$(dirname "$0")/../.."
. hack/env.sh
VM_DIR=${RINGCAP_VM_DIR:-$RINGCAP_CACHE/vm}
mkdir -p "$VM_DIR/debs"
exec 9>"$VM_DIR/.fetch.lock"
flock 9

# linux-image-amd64 is a meta package; its single "Depends: linux-image-<version>" is the kernel.
PKG=${KPKG:-$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')}
if [ -z "$PKG" ]; then
  echo "fetch-kernel: cannot resolve the kernel package from linux-image-amd64 (run apt-get update?)" >&2
  exit 1
fi
KVER=${PKG#linux-image-}
KDIR=$VM_DIR/kernel
if [ -f "$KDIR/KVER" ] && [ "$(cat "$KDIR/KVER")" = "$KVER" ] && [ -f "$KDIR/boot/vmlinuz-$KVER" ]; then
  echo "fetch-kernel: $PKG already unpacked in $KDIR"
  exit 0
fi

cd "$VM_DIR/debs"
if ! ls "${PKG}"_*.deb >/dev/null 2>&1; then
  echo "fetch-kernel: apt-get download $PKG"
  apt-get download "$PKG"
fi
DEB=$(ls "${PKG}"_*.deb | head -n1)
rm -rf "$KDIR.tmp"
mkdir -p "$KDIR.tmp"
dpkg-deb -x "$DEB" "$KDIR.tmp"
depmod -b "$KDIR.tmp" "$KVER"
missing=0
for m in rdma_rxe ib_core ib_uverbs rdma_ucm veth 9p 9pnet_virtio virtio_pci crc32_generic; do
  if [ -z "$(find "$KDIR.tmp/lib/modules/$KVER" -name "$m.ko*" -print -quit)" ]; then
    echo "fetch-kernel: module $m missing from $PKG" >&2
    missing=1
  fi
done
[ "$missing" = 0 ] || exit 1
echo "$KVER" > "$KDIR.tmp/KVER"
rm -rf "$KDIR"
mv "$KDIR.tmp" "$KDIR"
echo "fetch-kernel: $PKG unpacked in $KDIR"
