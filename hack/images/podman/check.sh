#!/usr/bin/env bash
# `make images-podman-check`: builds ringcap's images both ways from the same working tree and
# tag, the Dockerfile with podman from local bases (build.sh) and hack/images/build.sh (what
# `make images` and the e2e cluster use), then compares them and runs each image's binary
# (hack/images/compare, TestDockerfileMatchesMakeImages).
#
# Env: TAG (default: hack/images/tag.sh).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/env.sh"
cd "$HERE/../../.."
need_podman
export TAG=${TAG:-$(hack/images/tag.sh)}
MAKE_IMAGES=$PODMAN_DIR/make-images # not $RINGCAP_CACHE/images: the e2e cluster's images stay as they are
"$HERE/build.sh" >/dev/null
IMAGES_DIR=$MAKE_IMAGES hack/images/build.sh >/dev/null 2>&1 ||
  { echo "images-podman-check: hack/images/build.sh failed: run IMAGES_DIR=$MAKE_IMAGES hack/images/build.sh" >&2; exit 1; }
RINGCAP_COMPARE_DOCKERFILE=${PODMAN_IMAGES_DIR:-$PODMAN_DIR/images} RINGCAP_COMPARE_MAKE=$MAKE_IMAGES \
RINGCAP_COMPARE_TAG=$TAG RINGCAP_PODMAN_RUN_OPTS="${PODMAN_RUN_OPTS[*]}" \
  go test -tags podman -count=1 -v -timeout 10m ./hack/images/compare/
