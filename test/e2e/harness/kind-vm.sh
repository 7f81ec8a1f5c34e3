#!/usr/bin/env bash
# `make e2e-kind-vm`: the kind path on ringcap's CI machines, inside the Soft-RoCE VM. The host
# has no RDMA and no Docker; the VM boots Debian's kernel (rdma_rxe, TCG) with its own guest root
# (the e2e root + podman) and a fresh ext4 disk for podman's storage. In the VM, kind-guest.sh
# finds ringcap's kind node image (hack/kind/build-node-image.sh) on its disk and runs kind.sh up with the
# podman provider: rxe0/rxe1 exist before the cluster, /dev/infiniband is mapped into the node,
# the images are loaded with `kind load image-archive`. The suite runs on this host against the
# cluster's API server, published on the VM's tap address. Always stops qemu by PID and deletes
# the tap and the disk, on failure too (KEEP=1 leaves the VM running; kind-vm.sh down).
#
# Env: E2E_RUN (go test -run filter, default the whole suite ^TestRingcap$),
# KIND_VM_MEM (MiB, default 6144: see docs/kind.md), KIND_VM_UP_WAIT (seconds to wait for the
# cluster in the VM, default 2700: kind create alone takes 9.5-17 min under TCG), E2E_TIMEOUT
# (the suite's, default 75m: it ran 39 min under TCG).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/common.sh"
. "$REPO_ROOT/hack/kind/env.sh"
export PATH=$KIND_K8S_BIN:$PATH
W=${KIND_VM_WORK:-$KIND_DIR/vm}
S=$W/share
TAPDEV=${KIND_VM_TAP:-rcapkind0} HOST_IP=10.203.1.1 GUEST_IP=10.203.1.2
KIND_CLUSTER=${KIND_CLUSTER:-ringcap-e2e}
MEM=${KIND_VM_MEM:-6144}
DISK=$W/disk.img

down() {
  local q=$W/qemu.pid p
  p=$(cat "$q" 2>/dev/null || true)
  if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
    echo quit | socat - UNIX-CONNECT:"$W/qemu-monitor.sock" >/dev/null 2>&1
    for _ in $(seq 20); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$p" 2>/dev/null && { kill "$p"; sleep 2; kill -9 "$p" 2>/dev/null; }
    log "stopped qemu (pid $p)"
  fi
  rm -f "$q" "$W/qemu-monitor.sock" "$W/guest-shell.sock" "$DISK"
  if ip link show "$TAPDEV" >/dev/null 2>&1; then ip link del "$TAPDEV" && log "deleted tap $TAPDEV"; fi
}
# --- host side, outside the VM lock if run first as `kind-vm.sh prepare`: the suite, the node
# image and its archive, ringcap's images, the guest root (all kept when up to date)
prepare() {
  mkdir -p "$W"
  (cd "$REPO_ROOT" && go test -tags e2e -c -o "$W/e2e.test" ./test/e2e) || die "compiling the suite failed"
  KIND_NODE_SAVE=1 "$REPO_ROOT/hack/kind/build-node-image.sh" || die "building the kind node image failed"
  TAG=$(IMAGES_DIR=$W/images MKIMAGE_GZIP_LEVEL=0 "$REPO_ROOT/hack/images/build.sh" 2> "$W/build-images.log" | tail -n1) ||
    { tail -20 "$W/build-images.log"; die "image build failed"; }
  E2E_WORK=$W E2E_ROOT_EXTRA_PKGS=podman "$HERE/build-root.sh" || die "building the kind VM's guest root failed"
  disk_template || die "making the VM's podman storage (node image loaded) failed"
  command -v kind >/dev/null || "$REPO_ROOT/hack/install-tools.sh" >&2
}
# podman's storage for the VM with the node image already in it, made here (podman load of the
# archive takes about 6 minutes under TCG, seconds here): the image loaded into a storage tree laid
# out as the guest mounts the disk (/mnt/disk/ringcap/podman), less libpod's database (it records
# this host's paths; the guest makes its own), then an ext4 image of the tree (mkfs.ext4 -d keeps
# the layers' whiteouts and xattrs). Kept while the archive is unchanged.
disk_template() {
  local t=$W/disk-template.img r=$W/disk-root a=$KIND_NODE_ARCHIVE
  [ "$t" -nt "$KIND_NODE_ARCHIVE" ] && return 0
  umount "$r/ringcap/podman/storage/overlay" 2>/dev/null # containers/storage's own bind mount, if a load was cut short
  rm -rf "$r" "$t"; mkdir -p "$r/ringcap/podman"
  ( PODMAN_DIR=$r/ringcap/podman KIND_DIR=$r/conf; . "$REPO_ROOT/hack/kind/podman-env.sh" && kind_podman_env &&
    podman load -q -i "$a" ) >&2 || return 1
  rm -rf "$r/conf" "$r/ringcap/podman/storage/libpod" "$r/ringcap/podman/run" "$r/ringcap/podman/tmp"
  truncate -s 16G "$t.tmp" && mkfs.ext4 -q -F -d "$r" "$t.tmp" && mv "$t.tmp" "$t" || return 1
  rm -rf "$r"
  log "VM disk template $t: node image $KIND_NODE_IMAGE in podman's storage"
}
# suite: the e2e suite on this host against the VM's cluster (after kind-guest.sh's up)
suite() {
  . "$S/kind/$KIND_CLUSTER.env"
  export KUBECONFIG=$S/kind/$KIND_CLUSTER.kubeconfig
  # the suite's shell in the VM (guestRun): the debug shell on the VM's second serial port
  export RINGCAP_E2E_GUEST_SHELL=$W/guest-shell.sock RINGCAP_E2E_GUEST_SHARE=$S
  # one operator replica, without leader election: under TCG its lease renewals (5 s calls, a
  # 10 s deadline) failed, each loss ended the operator, and captures waited on its restarts
  export RINGCAP_E2E_HELM_SET=${RINGCAP_E2E_HELM_SET:-operator.leaderElection=false}
  # Under TCG the API server stalls for tens of seconds while a stream loads the vCPUs: step 3's
  # sender runs long enough for the status to be seen while data flows.
  export RINGCAP_E2E_SEND_SECONDS=${RINGCAP_E2E_SEND_SECONDS:-90}
  # the API server under TCG can miss a TLS handshake's 10 s: asked again for up to 5 min
  wait_for "the cluster's API server at $GUEST_IP:6443 answers from the host" 300 kubectl --request-timeout 30s get nodes ||
    die "the cluster's API server at $GUEST_IP:6443 does not answer from the host"
  kubectl get nodes -o wide >&2
  # the node's own address (podman's network in the VM, 10.204.0.0/24: hack/kind/podman-env.sh)
  # through the VM, for the suite's requests to host-network pods (a receiver's /metrics); the
  # route goes with the tap
  ip route replace 10.204.0.0/24 via "$GUEST_IP" dev "$TAPDEV" || die "routing the kind network through $TAPDEV failed"
  log "cluster up $((EPOCHSECONDS - ${t_start:-$EPOCHSECONDS})) s after start; running the suite"
  cd "$REPO_ROOT/test/e2e" && "$W/e2e.test" -test.v -test.count=1 -test.timeout "${E2E_TIMEOUT:-75m}" \
    -test.run "${E2E_RUN:-^TestRingcap\$}"
}
if [ "${1:-}" = down ]; then down; exit 0; fi
# `kind-vm.sh suite` (after KEEP=1): the suite again against the running VM's cluster
if [ "${1:-}" = suite ]; then suite; exit; fi
if [ "${1:-}" = prepare ]; then prepare; exit 0; fi
[ "$(id -u)" = 0 ] || die "must run as root (tap device, qemu)"
for b in qemu-system-x86_64 mkfs.ext4 socat; do command -v $b >/dev/null || die "$b missing: run hack/setup.sh"; done

rc=1
finish() {
  if [ "$rc" != 0 ]; then
    for f in "$S"/logs/*.log "$W/serial.log"; do [ -s "$f" ] && { echo "----- tail $f"; tail -n 80 "$f"; }; done >&2
  fi
  if [ -z "${KEEP:-}" ]; then down; else log "KEEP=1: VM left running; $0 down stops it"; fi
  log "e2e-kind-vm $([ "$rc" = 0 ] && echo PASSED || echo FAILED) after $((EPOCHSECONDS - t_start)) s"
  exit "$rc"
}
t_start=$EPOCHSECONDS
trap finish EXIT
trap 'exit 130' INT TERM
down

prepare
rm -rf "$S"; mkdir -p "$S"/{logs,images,bin,cmd,kind,repo/hack/kind,repo/test/e2e/harness}
for t in plugin operator ringcap; do cp "$W/images/$t.tar" "$S/images/"; done
echo "$TAG" > "$S/images/TAG"
cp "$(command -v kind)" "$S/bin/kind"
# ringcap itself for senders outside the cluster (steps 8, 11, 12: processes in the VM's own
# namespaces, as a digitiser host beside the node), as in the split layout (up.sh)
cp "$W/images/bin/ringcap" "$S/bin/ringcap" || die "ringcap binary missing in $W/images/bin"
cp "$REPO_ROOT/hack/env.sh" "$S/repo/hack/"; cp "$REPO_ROOT"/hack/kind/*.sh "$S/repo/hack/kind/"
cp "$HERE"/{kind.sh,common.sh} "$S/repo/test/e2e/harness/"
cp "$HERE/guest-boot.sh" "$S/"; cp "$HERE/kind-guest.sh" "$S/guest-node.sh"
cat > "$S/node.env" <<ENV
E2E_NODE=kind-vm
E2E_HOST_IP=$HOST_IP
E2E_GUEST_IP=$GUEST_IP
KIND_CLUSTER=$KIND_CLUSTER
ENV
# podman's storage: a fresh sparse ext4 disk per run (overlayfs cannot sit on the 9p root), a copy
# of the template with the node image in it
cp --sparse=always "$W/disk-template.img" "$DISK" || die "making the VM's disk failed"

ip tuntap add dev "$TAPDEV" mode tap && ip addr add "$HOST_IP/30" dev "$TAPDEV" && ip link set "$TAPDEV" up ||
  die "creating tap $TAPDEV failed"
KDIR=${RINGCAP_VM_DIR:-$RINGCAP_CACHE/vm}/kernel; KVER=$(cat "$KDIR/KVER")
rm -f "$W/serial.log"
qemu-system-x86_64 -accel tcg,thread=multi -cpu max -m "$MEM" -smp 2 -display none -no-reboot \
  -netdev tap,id=n0,ifname="$TAPDEV",script=no,downscript=no -device virtio-net-pci,netdev=n0 \
  -kernel "$KDIR/boot/vmlinuz-$KVER" -initrd "$W/initramfs.cpio.gz" \
  -append "console=ttyS0 panic=-1 loglevel=5 tsc=reliable softlockup_all_cpu_backtrace=1" \
  -drive file="$DISK",if=virtio,format=raw,cache=unsafe \
  -virtfs local,path="$W/root",mount_tag=root,security_model=none,id=root \
  -virtfs local,path="$S",mount_tag=host,security_model=none,id=host \
  -serial file:"$W/serial.log" \
  -chardev socket,id=sh1,path="$W/guest-shell.sock",server=on,wait=off -serial chardev:sh1 -monitor unix:"$W/qemu-monitor.sock",server=on,wait=off \
  -pidfile "$W/qemu.pid" -daemonize || die "qemu failed to start"
log "qemu started (pid $(cat "$W/qemu.pid"), ${MEM} MiB, serial log $W/serial.log)"
guest_up() {
  kill -0 "$(cat "$W/qemu.pid")" 2>/dev/null || die "qemu exited; serial log: $(tail -20 "$W/serial.log")" 2>&3
  watch_cluster
  [ -s "$S/kind/up.rc" ]
}
# watch_cluster: once kind has written the kubeconfig, the cluster's nodes and pods as the host
# sees them, every minute, to logs/cluster-watch.log (finish shows its tail when the run fails)
last_watch=0
watch_cluster() {
  local kc=$S/kind/$KIND_CLUSTER.kubeconfig
  [ -f "$kc" ] && [ $((EPOCHSECONDS - last_watch)) -ge 60 ] || return 0
  last_watch=$EPOCHSECONDS
  { echo "--- $(date +%T)"; timeout 30 kubectl --kubeconfig "$kc" --request-timeout 20s get nodes,pods -A -o wide; } \
    >> "$S/logs/cluster-watch.log" 2>&1
}
exec 3>&2
wait_for "kind cluster in the VM (kind-guest.sh finished)" "${KIND_VM_UP_WAIT:-2700}" guest_up || die "the kind cluster did not come up in ${KIND_VM_UP_WAIT:-2700} s"
up_rc=$(cat "$S/kind/up.rc")
[ "$up_rc" = 0 ] || die "kind.sh up failed in the VM (status $up_rc; log $S/logs/kind-up.log)"
suite
rc=$?
