#!/usr/bin/env bash
# Builds ringcap's three images from the working tree WITHOUT Docker or a registry, as
# docker-archive tarballs (`ctr images import`, `docker load`, `kind load image-archive`):
#
#   registry.k8s.io/pause:3.10.1  hack/images/pause, the test cluster's sandbox image
#   ringcap/plugin:TAG    static device plugin, FROM scratch
#   ringcap/operator:TAG  static operator, FROM scratch, user 65532
#   ringcap/ringcap:TAG   data plane: bin/ringcap (cgo) + the shared libraries it, ibv_devinfo and
#                         fi_info need + every rdma-core provider (mlx5, rxe, ...) and
#                         /etc/libibverbs.d + libfabric.so.1 (its providers built in), taken from
#                         this host's Debian packages, + busybox for a shell, + the static kubectl
#                         plugin bin/kubectl-ringcap
#
# The contents match the Dockerfile's targets (which users with Docker build instead).
#   hack/images/build.sh                 # -> $RINGCAP_CACHE/images/{plugin,operator,ringcap}.tar
# Env: TAG (default: hack/images/tag.sh), IMAGES_DIR (default $RINGCAP_CACHE/images).
# Prints the tag on the last line.
set -euo pipefail
cd "$(dirname "$0")/../.."
. hack/env.sh
OUT=${IMAGES_DIR:-$RINGCAP_CACHE/images}
TAG=${TAG:-$(hack/images/tag.sh)}
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
mkdir -p "$OUT/bin"
for c in plugin operator ringcap kubectl-ringcap; do
  [ -d "cmd/$c" ] || { echo "build-images: cmd/$c does not exist yet: cannot build ringcap/$c:$TAG" >&2; exit 1; }
done

LDFLAGS="-s -w -X main.version=$TAG"
GOFLAGS=-buildvcs=false CGO_ENABLED=0 go build -trimpath -ldflags "$LDFLAGS" -o "$OUT/bin/" ./cmd/plugin ./cmd/operator ./cmd/kubectl-ringcap ./hack/images/pause
GOFLAGS=-buildvcs=false CGO_ENABLED=1 go build -trimpath -ldflags "$LDFLAGS" -o "$OUT/bin/ringcap" ./cmd/ringcap
go build -o "$OUT/bin/mkimage" ./hack/images/mkimage
# MKIMAGE_GZIP_LEVEL=0 (stored layers) for nodes that import under an emulated CPU (make e2e)
MK() { "$OUT/bin/mkimage" -gzip-level "${MKIMAGE_GZIP_LEVEL:-1}" "$@"; }
for b in plugin operator kubectl-ringcap pause; do
  if ldd "$OUT/bin/$b" >/dev/null 2>&1; then echo "build-images: $b is not static" >&2; exit 1; fi
done

LABELS=(-label "org.opencontainers.image.source=https://github.com/ringcap/ringcap"
        -label "org.opencontainers.image.version=$TAG")
# the local cluster's sandbox image (it cannot pull registry.k8s.io/pause)
MK -t registry.k8s.io/pause:3.10.1 -o "$OUT/pause.tar" -entrypoint /pause "$OUT/bin/pause:/pause"
MK -t "ringcap/plugin:$TAG" -o "$OUT/plugin.tar" "${LABELS[@]}" -entrypoint /plugin "$OUT/bin/plugin:/plugin"
MK -t "ringcap/operator:$TAG" -o "$OUT/operator.tar" "${LABELS[@]}" -user 65532:65532 \
  -entrypoint /operator "$OUT/bin/operator:/operator"

# --- data plane root: ringcap + ldd closure + rdma-core providers + busybox ---
R=$OUT/ringcap-root; rm -rf "$R"; mkdir -p "$R/usr/bin" "$R/bin" "$R/etc/libibverbs.d"
copy_with_libs() { # FILE [DEST]: the file plus every shared library ldd resolves for it
  local f=$1 dest=${2:-$1}
  install -D -m 0755 "$(readlink -f "$f")" "$R$dest"
  ldd "$f" 2>/dev/null | awk '/=> \//{print $3} /^\t\/lib64/{print $1}' | while read -r l; do
    [ -e "$R$l" ] || install -D -m 0755 "$(readlink -f "$l")" "$R$l"
  done
}
copy_with_libs "$OUT/bin/ringcap" /usr/bin/ringcap
install -m 0755 "$OUT/bin/kubectl-ringcap" "$R/usr/bin/kubectl-ringcap"
for b in /usr/bin/ibv_devinfo:ibverbs-utils /usr/bin/ibv_devices:ibverbs-utils /usr/bin/fi_info:libfabric-bin; do
  [ -x "${b%%:*}" ] || { echo "build-images: ${b%%:*} missing (apt-get install ${b#*:})" >&2; exit 1; }
  copy_with_libs "${b%%:*}"
done
provdir=/usr/lib/$MULTIARCH/libibverbs
ls "$provdir"/lib*-rdmav*.so >/dev/null 2>&1 || { echo "build-images: no rdma-core providers in $provdir (apt-get install ibverbs-providers)" >&2; exit 1; }
for p in "$provdir"/lib*-rdmav*.so; do copy_with_libs "$p"; done
# libfabric with its providers (Debian builds verbs, efa, psm2, tcp, ... into libfabric.so.1; any
# provider shipped as a plugin lives in libfabric/), whether or not bin/ringcap links it
fabric=/lib/$MULTIARCH/libfabric.so.1 # the path ldd reports for a binary linking it
[ -e "$fabric" ] || { echo "build-images: $fabric missing (apt-get install libfabric1)" >&2; exit 1; }
copy_with_libs "$fabric"
for p in /usr/lib/"$MULTIARCH"/libfabric/*.so; do if [ -e "$p" ]; then copy_with_libs "$p"; fi; done
# glibc dlopens libgcc_s for pthread_exit/cancel
install -D -m 0755 "$(readlink -f "/lib/$MULTIARCH/libgcc_s.so.1")" "$R/lib/$MULTIARCH/libgcc_s.so.1"
cp /etc/libibverbs.d/*.driver "$R/etc/libibverbs.d/"
install -m 0755 /bin/busybox "$R/bin/busybox"
links=()
for a in $("$R/bin/busybox" --list); do [ -e "$R/bin/$a" ] || [ -e "$R/usr/bin/$a" ] || links+=(-symlink "/bin/$a=busybox"); done
printf 'root:x:0:0:root:/root:/bin/sh\nringcap:x:65532:65532:ringcap:/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' > "$R/etc/passwd"
printf 'root:x:0:\nringcap:x:65532:\nnogroup:x:65534:\n' > "$R/etc/group"
MK -t "ringcap/ringcap:$TAG" -o "$OUT/ringcap.tar" "${LABELS[@]}" -entrypoint /usr/bin/ringcap "${links[@]}" "$R:/"
echo "$TAG" > "$OUT/TAG"
ls -la "$OUT"/*.tar >&2
echo "$TAG"
