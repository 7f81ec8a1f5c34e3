#!/usr/bin/env bash
# Proves that hack/setup.sh takes a fresh Debian bookworm machine without Go to the toolchain
# go.mod needs: a debootstrap minbase root of bookworm (no Go, no make) gets this tree
# bind-mounted read-only at /src and runs, in a chroot, `SKIP_APT=1 SKIP_TOOLS=1 hack/setup.sh`
# (the Go step: bookworm-backports' Go fetches the pinned toolchain from the Go module proxy into
# /usr/local/go), then `go version`, `go build` and `go test` of small packages (one needs a module
# from the proxy), and the setup again, which must find nothing to do.
#
#   hack/setup-test.sh                  # make test-setup
#   SETUP_TEST_FULL=1 hack/setup-test.sh  # the whole hack/setup.sh: every apt package and Go tool (long)
#   SETUP_TEST_CMD='SKIP_TOOLS=1 /src/hack/setup.sh' hack/setup-test.sh  # another setup command: here apt + Go
# Env: SETUP_TEST_DIR (default $RINGCAP_CACHE/setup-test: the root of a run, the minbase tarball when
#      the podman bases have none), SETUP_TEST_TAR (a bookworm root tarball to use), SETUP_TEST_SRC
#      (the tree to test, default this one), DEBIAN_MIRROR, KEEP=1 (keep the root).
# Run as root. The root gets the host's resolv.conf and extra CAs (/usr/local/share/ca-certificates).
# Its mounts (/proc, /sys, /dev, /dev/pts, /src) are undone on every exit; the root is removed.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/env.sh
WORK=${SETUP_TEST_DIR:-$RINGCAP_CACHE/setup-test}
SRC=$(cd "${SETUP_TEST_SRC:-.}" && pwd)
# The minbase tarball: the one the podman image bases already made (make images-podman, in test-all
# before this test), else this test's own.
PODMAN_TAR=$RINGCAP_CACHE/podman/bases/bookworm-minbase.tar
TAR=${SETUP_TEST_TAR:-$WORK/bookworm-minbase.tar}
if [ -z "${SETUP_TEST_TAR:-}" ] && [ ! -s "$TAR" ] && [ -s "$PODMAN_TAR" ]; then TAR=$PODMAN_TAR; fi
ROOT=$WORK/root
T0=$SECONDS
log() { echo "[setup-test $((SECONDS - T0))s] $*" >&2; }
die() { log "FAIL: $*"; exit 1; }

host_mirror() { # the first Debian archive URI in this machine's apt sources (deb822 or one-line)
  { grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}'
    grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $2}'
  } | grep -E '/debian/?$' | head -n1 | sed 's:/*$::'
}

minbase_tar() { # debootstrap bookworm minbase once, cached as a tarball without apt lists
  [ -s "$TAR" ] && return
  local mirror=${DEBIAN_MIRROR:-$(host_mirror)} tmp
  [ -n "$mirror" ] || die "no Debian archive in /etc/apt/sources.list*: set DEBIAN_MIRROR"
  tmp=$(mktemp -d "$WORK/debootstrap.XXXXXX")
  log "debootstrap --variant=minbase bookworm from $mirror (once; cached as $TAR)"
  debootstrap --variant=minbase bookworm "$tmp" "$mirror" > "$tmp.log" 2>&1 ||
    { tail -20 "$tmp.log" >&2; rm -rf --one-file-system "$tmp"; die "debootstrap failed"; }
  rm -rf "$tmp"/var/cache/apt/archives/*.deb "$tmp"/var/lib/apt/lists/* "$tmp/debootstrap"
  tar --numeric-owner -C "$tmp" -cf "$TAR.tmp" . && mv "$TAR.tmp" "$TAR"
  rm -rf --one-file-system "$tmp" "$tmp.log"
}

size() { du -shc --one-file-system --exclude="$ROOT/src" "$@" 2>/dev/null | tail -n1 | cut -f1; }

mounts_under() { # every mount point at or under $ROOT, deepest first
  awk -v r="$ROOT" '$5 == r || index($5, r "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r
}

cleanup() { # undo the mounts (always), then remove the root unless KEEP=1 or a mount stayed
  local m
  for m in $(mounts_under); do umount "$m" 2>/dev/null || umount -l "$m" || log "cannot unmount $m"; done
  if [ -n "$(mounts_under)" ]; then log "mounts left under $ROOT, not removing it:"; mounts_under >&2; return 1; fi
  if [ -n "${KEEP:-}" ]; then log "kept $ROOT"; return; fi
  rm -rf --one-file-system "$ROOT"
}

fresh_root() { # the cached minbase, unpacked anew, with the host's DNS and the tree at /src
  [ -z "$(mounts_under)" ] || die "something is still mounted under $ROOT (a run in progress?)"
  rm -rf --one-file-system "$ROOT"
  mkdir -p "$ROOT"
  tar --numeric-owner -C "$ROOT" -xf "$TAR"
  cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
  # The host's own CAs (a TLS-inspecting proxy's, say): the root's ca-certificates adds them when setup installs it.
  if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    mkdir -p "$ROOT/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/"
  fi
  printf '#!/bin/sh\nexit 101\n' > "$ROOT/usr/sbin/policy-rc.d"; chmod +x "$ROOT/usr/sbin/policy-rc.d"
  mkdir -p "$ROOT/src"
  mount -t proc proc "$ROOT/proc"
  mount -t sysfs sysfs "$ROOT/sys"
  mount --bind /dev "$ROOT/dev"
  mount --bind /dev/pts "$ROOT/dev/pts"
  mount --bind "$SRC" "$ROOT/src"
  mount -o remount,bind,ro "$ROOT/src"
}

CHILD=
in_root() { # run a bash script in the root, with a clean environment, in its own process group
  setsid chroot "$ROOT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin bash -euo pipefail -c "$1" < /dev/null &
  CHILD=$!
  local rc=0; wait "$CHILD" || rc=$?
  CHILD=; return "$rc"
}

interrupted() { # a signal: stop what runs in the root (its process group), then exit (cleanup runs)
  if [ -n "$CHILD" ]; then kill -TERM -- "-$CHILD" 2>/dev/null || true; wait "$CHILD" 2>/dev/null || true; fi
  log "interrupted"; exit 130
}

main() {
  [ "$(id -u)" = 0 ] || die "needs root (debootstrap, mount, chroot)"
  command -v debootstrap >/dev/null || die "debootstrap not found: apt-get install debootstrap"
  mkdir -p "$WORK"
  exec 9> "$WORK/lock"
  flock -n 9 || die "another setup test holds $WORK/lock"
  minbase_tar
  trap cleanup EXIT
  trap interrupted INT TERM HUP
  fresh_root
  log "fresh bookworm minbase root at $ROOT ($(du -sh --one-file-system "$ROOT" | cut -f1)), $SRC at /src (read-only)"
  in_root '! command -v go && [ ! -e /usr/local/go ] && ! command -v make' ||
    die "the fresh root already has go or make"
  log "the root has neither go nor make"

  local setup=${SETUP_TEST_CMD:-SKIP_APT=1 SKIP_TOOLS=1 /src/hack/setup.sh} t
  if [ -n "${SETUP_TEST_FULL:-}" ]; then setup='/src/hack/setup.sh'; fi
  t=$SECONDS
  log "in the root: $setup"
  in_root "$setup" || die "$setup failed in the root"
  log "setup took $((SECONDS - t))s"

  t=$SECONDS
  in_root '. /src/hack/env.sh; cd /src && export GOFLAGS=-buildvcs=false
    echo "$(command -v go): $(go version) (go.mod: $(awk "\$1 == \"go\" {print \$2}" go.mod))"
    [ "$(go env GOVERSION)" = "go$RINGCAP_GO_VERSION" ] || { echo "go reports $(go env GOVERSION), not go$RINGCAP_GO_VERSION"; exit 1; }
    go build ./pkg/dada ./pkg/capture/wire ./pkg/pattern
    # TestCSender* builds examples/c-sender with make and gcc, which SKIP_APT leaves out; make test runs it.
    go test -count=1 -skip "^TestCSender" ./pkg/capture/wire ./pkg/pattern' || die "the installed go does not build this tree"
  log "go build and go test in the root took $((SECONDS - t))s"

  local again
  again=$(in_root "$setup" 2>&1) || { echo "$again" >&2; die "the second setup failed"; }
  grep -q 'install-go: go .* nothing to do' <<< "$again" || { echo "$again" >&2; die "the second setup did not find go in place"; }
  log "second setup: $(grep 'install-go:' <<< "$again")"
  log "root: $(size "$ROOT") (Go at /usr/local/go $(size "$ROOT/usr/local/go"), backports Go $(size "$ROOT"/usr/lib/go-*), Go module cache $(size "$ROOT/root/go"), build cache $(size "$ROOT/root/.cache"))"
  log "PASS in $((SECONDS - T0))s"
}

main "$@"
