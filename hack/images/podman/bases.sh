#!/usr/bin/env bash
# Makes the Dockerfile's two base images locally, without a registry, in the project's podman
# storage (hack/images/podman/env.sh):
#
#   localhost/ringcap-base/debian:bookworm-slim    stands in for debian:bookworm-slim: a
#       debootstrap minbase root of Debian bookworm (+ updates, security) from the apt mirror
#       this host uses, imported with `podman import`
#   localhost/ringcap-base/golang:GO-bookworm      stands in for golang:GO-bookworm: the root
#       above + gcc, libc6-dev, make, pkg-config, ca-certificates, git + this host's Go
#       toolchain (go env GOROOT) in /usr/local/go, GOPATH=/go, GOTOOLCHAIN=local
#
# Cached: the debootstrap root as a tarball under $RINGCAP_CACHE/podman/bases and both images in
# the podman storage; a rerun only checks (the golang base is rebuilt when the host's Go changes).
# Env: DEBIAN_MIRROR (default: the first Debian URI in /etc/apt/sources.list*), REBUILD=1.
set -euo pipefail
. "$(dirname "$0")/env.sh"
need_podman
command -v debootstrap >/dev/null || { echo "podman-bases: debootstrap not found: apt-get install debootstrap" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "podman-bases: debootstrap and podman's storage need root" >&2; exit 1; }
mkdir -p "$PODMAN_DIR/bases" "$PODMAN_DIR/tmp"
export TMPDIR=$PODMAN_DIR/tmp
log() { echo "podman-bases: $*" >&2; }

host_mirror() { # the host's Debian mirror (deb822 .sources or one-line .list), without a trailing /
  { grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}'
    grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $2}'
  } | grep -E '/debian/?$' | head -1 | sed 's:/*$::'
}

rootfs_tar() { # debootstrap bookworm minbase once; prints the tarball's path
  local tar=$PODMAN_DIR/bases/bookworm-minbase.tar
  if [ -s "$tar" ] && [ -z "${REBUILD:-}" ]; then echo "$tar"; return; fi
  local mirror=${DEBIAN_MIRROR:-$(host_mirror)}
  [ -n "$mirror" ] || { echo "podman-bases: no Debian mirror in /etc/apt/sources.list*: set DEBIAN_MIRROR" >&2; exit 1; }
  local root; root=$(mktemp -d "$PODMAN_DIR/bases/root.XXXXXX")
  log "debootstrap --variant=minbase bookworm from $mirror (a few minutes, once)"
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.log" 2>&1 ||
    { tail -20 "$root.log" >&2; rm -rf "$root"; echo "podman-bases: debootstrap failed (log above)" >&2; exit 1; }
  # the same suites as the public image: point releases and security updates
  rm -f "$root/etc/apt/sources.list"
  cat >"$root/etc/apt/sources.list.d/debian.sources" <<SRC
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${mirror%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/* "$root/debootstrap"
  tar --numeric-owner -C "$root" -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
  rm -rf "$root" "$root.log"
  echo "$tar"
}

label() { "${PODMAN[@]}" image inspect --format "{{index .Config.Labels \"$2\"}}" "$1" 2>/dev/null || true; }

runtime_base() {
  if "${PODMAN[@]}" image exists "$RUNTIME_BASE" && [ -z "${REBUILD:-}" ]; then return; fi
  local tar; tar=$(rootfs_tar)
  log "import $RUNTIME_BASE"
  "${PODMAN[@]}" import -q --change 'CMD ["bash"]' "$tar" "$RUNTIME_BASE" >/dev/null
}

build_base() {
  local gover goroot; gover=$(go env GOVERSION); goroot=$(go env GOROOT)
  if [ "$(label "$BUILD_BASE" org.ringcap.go-version)" = "$gover" ] && [ -z "${REBUILD:-}" ]; then return; fi
  log "build $BUILD_BASE ($gover from $goroot)"
  "${PODMAN[@]}" build --pull=never --network host -q -t "$BUILD_BASE" \
    --build-arg "BASE=$RUNTIME_BASE" --build-arg "GO_VERSION=$gover" \
    -f "$(cd "$(dirname "$0")" && pwd)/golang.Containerfile" "$goroot" >/dev/null
}

runtime_base
build_base
log "ready: $RUNTIME_BASE $BUILD_BASE"
