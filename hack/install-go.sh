#!/usr/bin/env bash
# Installs the Go toolchain ringcap builds with at /usr/local/go, on Debian bookworm, as root,
# when the `go` found after hack/env.sh is missing or older than go.mod's `go` line.
# Idempotent: a second run only checks the version.
#
# How: a Go >= 1.21 fetches the toolchain. When the one on PATH is older (bookworm's own
# golang-go is 1.19) or missing, this adds the bookworm-backports suite to apt
# (/etc/apt/sources.list.d/ringcap-bookworm-backports.sources, only when no source has it yet) and
# installs its Go ($GO_BOOTSTRAP_PKG). That Go, run with GOTOOLCHAIN=go$RINGCAP_GO_VERSION, fetches
# golang.org/toolchain@v0.0.1-go$RINGCAP_GO_VERSION.linux-ARCH from the Go module proxy (checked
# against the checksum database) into a scratch module cache, from where it moves to /usr/local/go
# (replacing an older Go there).
#
#   hack/install-go.sh
# Env: RINGCAP_GO_VERSION (hack/env.sh), GO_BOOTSTRAP_PKG (default golang-1.23-go),
#      DEBIAN_MIRROR (default: the first Debian URI in this machine's apt sources), GOPROXY.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/env.sh
GO_BOOTSTRAP_PKG=${GO_BOOTSTRAP_PKG:-golang-1.23-go}
GOROOT_DEST=/usr/local/go
log() { echo "install-go: $*" >&2; }
die() { log "$*"; exit 1; }

# The version go.mod needs ("1.26.0") and the one a go binary reports ("1.26.8"; empty when none).
wanted_version() { awk '$1 == "go" { print $2; exit }' go.mod; }
go_version() { # go binary
  command -v "$1" >/dev/null 2>&1 || return 0
  GOTOOLCHAIN=local "$1" env GOVERSION 2>/dev/null | sed -E 's/^go([0-9.]+).*/\1/'
}
at_least() { [ -n "$1" ] && [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; } # have want

host_mirror() { # the first Debian archive URI in this machine's apt sources (deb822 or one-line)
  { grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}'
    grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $2}'
  } | grep -E '/debian/?$' | head -n1 | sed 's:/*$::'
}

add_backports() { # bookworm-backports in apt's sources, once
  if grep -hsqE '(^Suites:.*|^deb .*)[[:space:]]bookworm-backports([[:space:]]|$)' \
      /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; then
    return
  fi
  local mirror=${DEBIAN_MIRROR:-$(host_mirror)}
  [ -n "$mirror" ] || die "no Debian archive in /etc/apt/sources.list*: set DEBIAN_MIRROR"
  log "adding bookworm-backports from $mirror to apt (/etc/apt/sources.list.d/ringcap-bookworm-backports.sources)"
  cat > /etc/apt/sources.list.d/ringcap-bookworm-backports.sources <<SRC
# Added by ringcap's hack/install-go.sh: Debian's newer Go, used once to fetch the toolchain go.mod needs.
Types: deb
URIs: $mirror
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
}

bootstrap_go() { # prints the path of a Go able to fetch toolchains (>= 1.21): the one on PATH, else Debian's
  local cur pkg_go="/usr/lib/go-${GO_BOOTSTRAP_PKG#golang-}"; pkg_go="${pkg_go%-go}/bin/go"
  cur=$(command -v go || true)
  if [ -n "$cur" ] && at_least "$(go_version "$cur")" 1.21; then echo "$cur"; return; fi
  if ! at_least "$(go_version "$pkg_go")" 1.21; then
    [ "$(. /etc/os-release && echo "${VERSION_CODENAME:-}")" = bookworm ] ||
      die "no Go >= 1.21 to fetch go$RINGCAP_GO_VERSION with, and this is not Debian bookworm: install Debian's golang-go (trixie or later) or any Go >= 1.21, then rerun"
    add_backports
    # apt's lists may predate the suite (just added, or never fetched on a fresh root)
    apt-cache show "$GO_BOOTSTRAP_PKG" >/dev/null 2>&1 || apt-get update -q >&2
    log "installing $GO_BOOTSTRAP_PKG from bookworm-backports (apt)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$GO_BOOTSTRAP_PKG" ca-certificates >&2
  fi
  at_least "$(go_version "$pkg_go")" 1.21 || die "$pkg_go from $GO_BOOTSTRAP_PKG is missing or older than 1.21"
  echo "$pkg_go"
}

fetch_toolchain() { # bootstrap-go version: fetch the toolchain into a scratch module cache, move it to $GOROOT_DEST
  local boot=$1 ver=$2 scratch root
  mkdir -p "$RINGCAP_CACHE"
  scratch=$(mktemp -d "$RINGCAP_CACHE/go-toolchain.XXXXXX")
  # shellcheck disable=SC2064 # the path now: the trap runs after this function returns
  trap "chmod -R u+w '$scratch' 2>/dev/null; rm -rf '$scratch'" EXIT
  log "fetching go$ver from the Go module proxy (golang.org/toolchain, about 70 MB)"
  # Debian's go.env sets GOTOOLCHAIN=local; the environment overrides it. The toolchain runs once
  # from the module cache (`go version` sets its commands' exec bits there), then moves.
  (cd "$scratch" && GOTOOLCHAIN="go$ver" GOMODCACHE="$scratch/mod" GOPATH="$scratch/gopath" GOFLAGS= \
    GOPROXY="${GOPROXY:-https://proxy.golang.org,direct}" GOSUMDB="${GOSUMDB:-sum.golang.org}" "$boot" version) >&2 ||
    die "fetching go$ver with $boot (GOTOOLCHAIN) failed"
  root=$(echo "$scratch"/mod/golang.org/toolchain@v0.0.1-go"$ver".*)
  [ -x "$root/bin/go" ] || die "no toolchain at $root after the fetch"
  chmod -R u+w "$root"
  if [ -e "$GOROOT_DEST" ]; then
    log "removing the older Go at $GOROOT_DEST ($(go_version "$GOROOT_DEST/bin/go"))"
    rm -rf "$GOROOT_DEST"
  fi
  mv "$root" "$GOROOT_DEST"
}

main() {
  local want have
  want=$(wanted_version); [ -n "$want" ] || die "no go line in go.mod"
  have=$(go_version go)
  if at_least "$have" "$want"; then
    log "go $have at $(command -v go) (go.mod needs $want): nothing to do"
    return
  fi
  at_least "$RINGCAP_GO_VERSION" "$want" || die "RINGCAP_GO_VERSION=$RINGCAP_GO_VERSION is older than go.mod's $want"
  [ "$(id -u)" = 0 ] || die "go ${have:-missing}, go.mod needs $want: run as root to install go$RINGCAP_GO_VERSION at $GOROOT_DEST"
  log "go ${have:-not found}, go.mod needs $want: installing go$RINGCAP_GO_VERSION at $GOROOT_DEST"
  fetch_toolchain "$(bootstrap_go)" "$RINGCAP_GO_VERSION"
  have=$(go_version "$GOROOT_DEST/bin/go")
  [ "$have" = "$RINGCAP_GO_VERSION" ] || die "$GOROOT_DEST/bin/go reports '$have', not $RINGCAP_GO_VERSION"
  log "ready: $(GOTOOLCHAIN=local "$GOROOT_DEST/bin/go" version) at $GOROOT_DEST"
}

main
