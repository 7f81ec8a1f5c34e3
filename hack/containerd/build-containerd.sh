#!/usr/bin/env bash
# Builds containerd 2.x (containerd, containerd-shim-runc-v2, ctr) for the e2e node from the Go
# module proxy alone: `go install module/cmd/...@version`, no git clone, no release download.
# containerd 2 is what gives the node CDI (Container Device Interface), which the DRA driver's
# Prepare needs: Debian bookworm's containerd 1.6 has none. runc stays Debian's.
#
#   hack/containerd/build-containerd.sh
#
# Static binaries (CGO_ENABLED=0) without the btrfs/devmapper/zfs snapshotters (cgo or unused by
# the node, which snapshots with overlayfs); -trimpath, and the version ldflags containerd's own
# Makefile sets, so `containerd --version` says what it is. Binaries already built for this
# version are kept (delete $OUT_DIR to force a rebuild).
#
# Output: $OUT_DIR (default /var/tmp/ringcap/containerd/$CONTAINERD_VERSION/bin). Cold build on
# 2 cores: 2–3 minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
. hack/env.sh
CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.4.2}
OUT_DIR=${OUT_DIR:-$RINGCAP_CACHE/containerd/$CONTAINERD_VERSION/bin}
MOD=github.com/containerd/containerd/v2
CMDS=(containerd containerd-shim-runc-v2 ctr)

todo=()
for c in "${CMDS[@]}"; do
  if [ -x "$OUT_DIR/$c" ] && [ "$(cat "$OUT_DIR/.$c.version" 2>/dev/null)" = "$CONTAINERD_VERSION" ]; then continue; fi
  todo+=("$c")
done
[ ${#todo[@]} -gt 0 ] || { echo "build-containerd: ${CMDS[*]} $CONTAINERD_VERSION already in $OUT_DIR"; exit 0; }

mkdir -p "$OUT_DIR"
export GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOBIN=$OUT_DIR
ldflags="-s -w -X $MOD/version.Version=$CONTAINERD_VERSION -X $MOD/version.Revision=modproxy"
ldflags+=" -X $MOD/version.Package=$MOD"
pkgs=()
for c in "${todo[@]}"; do pkgs+=("$MOD/cmd/$c@$CONTAINERD_VERSION"); done
echo "build-containerd: building ${todo[*]} $CONTAINERD_VERSION (minutes on a cold build cache)"
start=$SECONDS
go install -trimpath -tags "no_btrfs no_devmapper no_zfs" -ldflags "$ldflags" "${pkgs[@]}"
for c in "${todo[@]}"; do echo "$CONTAINERD_VERSION" > "$OUT_DIR/.$c.version"; done
echo "build-containerd: built ${todo[*]} in $((SECONDS - start)) s into $OUT_DIR"
