#!/usr/bin/env bash
# Builds SARAO's spead2 (the SPEAD reference implementation) C++ tools spead2_send and
# spead2_recv, for hack/spead2-interop.sh and hack/spead2-bench.sh (manual; not part of CI).
# Takes a spead2 checkout of the autotools era (v3.x, e.g. tag v3.13.0 of
# github.com/ska-sa/spead2; v4 builds with meson), installs the Debian packages the build
# needs, bootstraps the checkout if it has no configure script, and builds out of tree into
# $RINGCAP_CACHE/spead2 without ibverbs, pcap or CUDA. Idempotent: it does nothing when both
# tools are built.
#
#   hack/spead2-build.sh /path/to/spead2-checkout
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/env.sh
SRC=$(cd "${1:?usage: hack/spead2-build.sh SPEAD2_CHECKOUT}" && pwd)
B=$RINGCAP_CACHE/spead2
JOBS=${SPEAD2_JOBS:-2}

if [ -x "$B/spead2_send" ] && [ -x "$B/spead2_recv" ]; then
  echo "spead2: built in $B"
  exit 0
fi

pkgs=(g++ make pkg-config autoconf automake libtool python3 python3-jinja2 python3-pycparser python3-packaging
  libboost-program-options-dev libboost-system-dev libdivide-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== apt-get install ${missing[*]}"
  sudo=(); [ "$(id -u)" = 0 ] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" ||
    { "${sudo[@]}" apt-get update && "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"; }
fi

# The Debian python3 that has the packages above, ahead of any other python3 on PATH (pyenv).
export PATH="/usr/bin:$PATH"
if [ ! -x "$SRC/configure" ]; then
  echo "== bootstrap $SRC"
  (cd "$SRC" && ./bootstrap.sh)
fi

echo "== configure and build spead2_send, spead2_recv into $B"
mkdir -p "$B/build"
cd "$B/build"
[ -f Makefile ] || "$SRC/configure" --without-ibv --without-mlx5dv --without-pcap --without-cap \
  --without-cuda --without-gdrapi
make -C include
nice -n 19 make -C src -j"$JOBS" spead2_send spead2_recv
cp src/spead2_send src/spead2_recv "$B/"
echo "spead2: built $B/spead2_send $B/spead2_recv"
