#!/usr/bin/env bash
# `make images-podman`: builds the Dockerfile's three targets with podman, from local base images
# (bases.sh), without Docker or a registry:
#
#   ringcap/{plugin,operator,ringcap}:TAG in the project's podman storage (env.sh), and
#   $RINGCAP_CACHE/podman/images/{plugin,operator,ringcap}.tar (docker-archive, for
#   `kind load image-archive`, `ctr images import`, `docker load`)
#
# Env: TAG (default: hack/images/tag.sh), PODMAN_IMAGES_DIR (default $RINGCAP_CACHE/podman/images).
# Prints the tag on the last line.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/env.sh"
cd "$HERE/../../.."
need_podman
TAG=${TAG:-$(hack/images/tag.sh)}
OUT=${PODMAN_IMAGES_DIR:-$PODMAN_DIR/images}
mkdir -p "$OUT" "$PODMAN_DIR/tmp"
export TMPDIR=$PODMAN_DIR/tmp # buildah keeps the Dockerfile's cache mounts (Go modules, build cache) here
MODCACHE=$(go env GOMODCACHE)/cache/download
go mod download # the host's cache holds every module the build needs
"$HERE/bases.sh"
start=$(date +%s)
for t in plugin operator ringcap; do
  echo "images-podman: podman build --target $t" >&2
  # --network host: the build and runtime stages fetch Debian packages from the mirror; the Go
  # modules come from this host's module cache (read-only), as a file:// GOPROXY
  "${PODMAN[@]}" build --pull=never --network host --layers -q \
    --volume "$MODCACHE:/goproxy:ro" --build-arg GOPROXY=file:///goproxy \
    --build-arg "BUILD_IMAGE=$BUILD_BASE" --build-arg "RUNTIME_IMAGE=$RUNTIME_BASE" \
    --build-arg "GO_VERSION=$GO_VERSION" --build-arg "VERSION=$TAG" \
    --target "$t" -t "ringcap/$t:$TAG" . >/dev/null
  rm -f "$OUT/$t.tar"
  "${PODMAN[@]}" save -q --format docker-archive -o "$OUT/$t.tar" "ringcap/$t:$TAG"
done
# the layers of earlier builds that this one did not reuse (each changed tree leaves a build stage)
"${PODMAN[@]}" image prune -f --filter "until=$start" >/dev/null
echo "$TAG" > "$OUT/TAG"
ls -la "$OUT"/*.tar >&2
echo "$TAG"
