#!/usr/bin/env bash
# hack/kind/containerd-state.sh OUT.tar IMAGE.tar...: containerd's state directory
# (/var/lib/containerd) for ringcap's kind node image, with IMAGE.tar... (docker archives) already
# imported into the k8s.io namespace and unpacked for the overlayfs snapshotter, so the node
# imports nothing at boot (an import of the control plane's images took over 5 minutes under the
# Soft-RoCE VM's TCG). kind's own node images likewise ship a filled /var/lib/containerd.
#
# Runs the containerd this project builds (build-bins.sh) on this host, as root, against a root
# directory of its own (no CRI, no NRI, nothing outside the work directory), imports with ctr,
# stops it by PID and writes the content store, metadata and overlayfs snapshots as OUT.tar.
# Every image must have a single layer: a snapshot of a later layer holds overlayfs whiteouts
# (character devices 0:0), which an image layer cannot carry (they would read as deletions); the
# script fails on any device node outside an image's /dev.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/env.sh"
[ $# -ge 2 ] || kind_die "usage: $0 OUT.tar IMAGE.tar..."
out=$1; shift
B=$KIND_CONTAINERD_BIN
W=$(mktemp -d "$KIND_DIR/containerd-state.XXXXXX")
root=$W/root sock=$W/containerd.sock pid=
stop() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    wait "$pid" 2>/dev/null || true
  fi
  pid=
}
cleanup() { stop; rm -rf "$W"; }
trap cleanup EXIT

cat > "$W/config.toml" <<TOML
version = 3
root = "$root"
state = "$W/state"
# only what an import needs: no CRI (it would configure this host's networking), no NRI socket
# in /var/run, no /opt/containerd
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime",
  "io.containerd.nri.v1.nri", "io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.snapshotter.v1.erofs", "io.containerd.differ.v1.erofs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.monitor.container.v1.restart"]
# collect garbage at every deletion (an import's lease ends): the layers once unpacked
[plugins.'io.containerd.gc.v1.scheduler']
  deletion_threshold = 1
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
TOML
"$B/containerd" --config "$W/config.toml" > "$W/containerd.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  "$B/ctr" -a "$sock" version >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || kind_die "containerd exited: $(tail -5 "$W/containerd.log")"
  sleep 0.2
done
"$B/ctr" -a "$sock" version >/dev/null || kind_die "containerd did not answer on $sock: $(tail -5 "$W/containerd.log")"

CTR=("$B/ctr" -a "$sock" --namespace k8s.io)
for t in "$@"; do
  # pinned: the kubelet's image garbage collection never removes them (nothing can be pulled);
  # the layers' blobs go once unpacked (the snapshots are what runs; the node never unpacks again)
  "${CTR[@]}" images import --local --snapshotter overlayfs --discard-unpacked-layers \
    --label io.cri-containerd.pinned=pinned "$t" >/dev/null 2> "$W/ctr.err" ||
    kind_die "importing $t into containerd failed: $(grep -v DEPRECATION "$W/ctr.err" | tail -5)"
done
n=$("${CTR[@]}" images ls -q | wc -l)
[ "$n" = $# ] || kind_die "containerd lists $n images after importing $#: $("${CTR[@]}" images ls -q)"
blobs() { "${CTR[@]}" content ls -q | wc -l; }
for _ in $(seq 50); do [ "$(blobs)" -le $((3 * n)) ] && break; sleep 0.2; done
[ "$(blobs)" -le $((3 * n)) ] || kind_die "the layers' blobs are still in the content store: $(blobs) blobs for $n images"
stop

snaps=$root/io.containerd.snapshotter.v1.overlayfs
# device nodes under an image's /dev (Debian's base has a few): the runtime mounts its own /dev
# over them, and the node image's build cannot make them
find "$snaps" -regextype posix-extended -regex '.*/snapshots/[0-9]+/fs/dev/.*' \( -type c -o -type b \) -delete
wh=$(find "$snaps" \( -type c -o -type b \) | head -3)
[ -z "$wh" ] || kind_die "device nodes or overlayfs whiteouts in the snapshots (an image with more than one layer?): $wh"
tar -C "$root" --numeric-owner --xattrs --xattrs-include='security.capability' -cf "$out.tmp" \
  io.containerd.content.v1.content io.containerd.metadata.v1.bolt io.containerd.snapshotter.v1.overlayfs
mv "$out.tmp" "$out"
kind_log "containerd state with $n images unpacked: $out ($(du -m "$out" | cut -f1) MiB)"
