#!/usr/bin/env bash
# Brings up ringcap's e2e cluster (split layout, see test/e2e/README.md): a real single-node
# Kubernetes v1.34.10 whose control plane (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler) runs natively on this host and whose only node runs inside the Soft-RoCE VM
# (containerd, kubelet, kube-proxy, rxe0/rxe1), joined by the tap $E2E_TAP on a private /30.
# The images are built from the working tree (hack/images/build.sh) and imported at boot.
# Writes $E2E_WORK/e2e.env (KUBECONFIG, image tag, ...). Undo with down.sh (also on failure).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/common.sh"
[ "$(id -u)" = 0 ] || die "must run as root (tap device, qemu, control plane)"
# Kubernetes from the Go module proxy (kept once built; minutes on a cold Go build cache)
OUT_DIR=$K8S_BIN K8S_VERSION=$K8S_VERSION "$REPO_ROOT/hack/k8s/build-k8s.sh" \
  kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl >&2 || die "building Kubernetes $K8S_VERSION failed"
case $E2E_CONTAINERD in
  2) OUT_DIR=$CONTAINERD_BIN CONTAINERD_VERSION=$CONTAINERD_VERSION "$REPO_ROOT/hack/containerd/build-containerd.sh" >&2 ||
       die "building containerd $CONTAINERD_VERSION failed" ;;
  1) ;;
  *) die "E2E_CONTAINERD=$E2E_CONTAINERD: want 2 (containerd 2.x from the module proxy) or 1 (Debian's 1.6)" ;;
esac
for b in qemu-system-x86_64 etcd openssl debootstrap; do command -v $b >/dev/null || die "$b missing: run hack/setup.sh"; done
[ -e /dev/net/tun ] || die "/dev/net/tun missing: cannot create the tap device"
if [ -f "$E2E_WORK/pids/qemu.pid" ] || ls "$E2E_WORK"/pids/*.pid >/dev/null 2>&1; then
  log "a previous e2e cluster was left behind: stopping it"; "$HERE/down.sh"
fi
mkdir -p "$E2E_WORK/pids" "$E2E_WORK/logs"

"$HERE/build-root.sh"
log "guest root ready"
if [ -n "${E2E_PREBUILT_IMAGES:-}" ]; then   # iterate on the harness: reuse the last image build
  TAG=$(cat "$RINGCAP_CACHE/images/TAG" 2>/dev/null || echo none)
  log "using the images already in $RINGCAP_CACHE/images (tag $TAG)"
else
  TAG=$(MKIMAGE_GZIP_LEVEL=0 "$REPO_ROOT/hack/images/build.sh" 2> "$E2E_WORK/logs/build-images.log" | tail -n1) ||
    { tail -20 "$E2E_WORK/logs/build-images.log"; die "image build failed (log $E2E_WORK/logs/build-images.log)"; }
  log "images ringcap/{plugin,operator,ringcap}:$TAG built from the working tree"
fi

S=$E2E_WORK/share
rm -rf "$S/logs" "$S/images"; mkdir -p "$S/logs" "$S/images"
for i in pause plugin operator ringcap; do
  if [ -f "$RINGCAP_CACHE/images/$i.tar" ]; then cp "$RINGCAP_CACHE/images/$i.tar" "$S/images/"
  elif [ -z "${E2E_PREBUILT_IMAGES:-}" ] || [ $i = pause ]; then die "image $RINGCAP_CACHE/images/$i.tar missing"; fi
done
cp "$HERE/guest-boot.sh" "$HERE/guest-node.sh" "$S/"
# ringcap itself for senders that are not pods (processes in the VM's own network namespace, as a
# digitiser host on the data network): the host and the guest root are both Debian bookworm, so
# the cgo binary of the image build runs on the guest's libibverbs.
rm -rf "$S/bin" "$S/cmd"; mkdir -p "$S/bin" "$S/cmd"
cp "$RINGCAP_CACHE/images/bin/ringcap" "$S/bin/ringcap" || die "ringcap binary missing in $RINGCAP_CACHE/images/bin"
# containerd 2.x for the node (guest-node.sh puts it first on PATH); hard links where the cache
# and the share are on one file system
rm -rf "$S/containerd"
if [ "$E2E_CONTAINERD" = 2 ]; then
  mkdir -p "$S/containerd/bin"
  for b in containerd containerd-shim-runc-v2 ctr; do
    cp -l "$CONTAINERD_BIN/$b" "$S/containerd/bin/" 2>/dev/null || cp "$CONTAINERD_BIN/$b" "$S/containerd/bin/" ||
      die "containerd binary $b missing in $CONTAINERD_BIN"
  done
fi
rm -rf "$S/cluster"; "$HERE/gen-certs.sh" "$S/cluster"   # fresh PKI: nothing from an earlier run is trusted
cat > "$S/node.env" <<ENV
E2E_NODE=$E2E_NODE
E2E_HOST_IP=$E2E_HOST_IP
E2E_GUEST_IP=$E2E_GUEST_IP
SERVICE_CIDR=$SERVICE_CIDR
POD_CIDR=$POD_CIDR
DNS_SERVICE_IP=$DNS_SERVICE_IP
CONTAINERD_MAJOR=$E2E_CONTAINERD
ENV
cp "$S/cluster/admin.kubeconfig" "$E2E_KUBECONFIG"
P=$S/cluster/pki; C=$S/cluster

# --- tap on a private /30 (no sysctl, route or firewall change on this host) ---
ip tuntap add dev "$E2E_TAP" mode tap
ip addr add "$E2E_HOST_IP/30" dev "$E2E_TAP"
ip link set "$E2E_TAP" up
log "tap $E2E_TAP $E2E_HOST_IP/30"

# --- the VM (boots while the control plane starts; the kubelet retries until the API answers) ---
KDIR=${RINGCAP_VM_DIR:-$RINGCAP_CACHE/vm}/kernel; KVER=$(cat "$KDIR/KVER")
rm -f "$E2E_WORK/serial.log" "$E2E_WORK/guest-shell.sock" "$E2E_WORK/qemu-monitor.sock"
# Kernel arguments: tsc=reliable as in hack/vm/run.sh (TCG guests otherwise drop the TSC for the
# emulated HPET, where every clock read is an MMIO exit); loglevel=5 and all-CPU backtraces so a
# guest kernel soft lockup leaves its stacks in the serial log rather than one line.
qemu-system-x86_64 -accel tcg,thread=multi -cpu max -m "$E2E_MEM" -smp 2 -display none -no-reboot \
  -netdev tap,id=n0,ifname="$E2E_TAP",script=no,downscript=no -device virtio-net-pci,netdev=n0 \
  -kernel "$KDIR/boot/vmlinuz-$KVER" -initrd "$E2E_WORK/initramfs.cpio.gz" -append "console=ttyS0 panic=-1 loglevel=5 tsc=reliable softlockup_all_cpu_backtrace=1" \
  -virtfs local,path="$E2E_WORK/root",mount_tag=root,security_model=none,id=root \
  -virtfs local,path="$S",mount_tag=host,security_model=none,id=host \
  -virtfs local,path="$K8S_BIN",mount_tag=k8sbin,security_model=none,id=k8sbin,readonly=on \
  -serial file:"$E2E_WORK/serial.log" \
  -chardev socket,id=sh1,path="$E2E_WORK/guest-shell.sock",server=on,wait=off -serial chardev:sh1 \
  -monitor unix:"$E2E_WORK/qemu-monitor.sock",server=on,wait=off \
  -pidfile "$E2E_WORK/pids/qemu.pid" -daemonize
log "qemu started (pid $(cat "$E2E_WORK/pids/qemu.pid"), serial log $E2E_WORK/serial.log)"

# --- control plane on this host: etcd on 127.0.0.1, the API server on the tap address ---
start() { local name=$1; shift; setsid nohup "$@" > "$E2E_WORK/logs/$name.log" 2>&1 < /dev/null & echo $! > "$E2E_WORK/pids/$name.pid"; }
rm -rf "$E2E_WORK/etcd"
start etcd etcd --name ringcap-e2e --data-dir "$E2E_WORK/etcd" \
  --listen-client-urls "http://127.0.0.1:$E2E_ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$E2E_ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$((E2E_ETCD_PORT + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((E2E_ETCD_PORT + 1))" \
  --initial-cluster "ringcap-e2e=http://127.0.0.1:$((E2E_ETCD_PORT + 1))"
wait_for "etcd healthy" 60 curl -sf "http://127.0.0.1:$E2E_ETCD_PORT/health"
start kube-apiserver kube-apiserver --bind-address="$E2E_HOST_IP" --advertise-address="$E2E_HOST_IP" --secure-port=6443 \
  --etcd-servers="http://127.0.0.1:$E2E_ETCD_PORT" \
  --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" --client-ca-file="$P/ca.crt" \
  --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-cluster-ip-range="$SERVICE_CIDR" --allow-privileged=true \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
  --feature-gates=ResourceHealthStatus=true \
  --kubelet-client-certificate="$P/apiserver-kubelet-client.crt" --kubelet-client-key="$P/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP,Hostname \
  --requestheader-client-ca-file="$P/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
  --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
  --requestheader-extra-headers-prefix=X-Remote-Extra- \
  --proxy-client-cert-file="$P/front-proxy-client.crt" --proxy-client-key-file="$P/front-proxy-client.key"
export KUBECONFIG=$E2E_KUBECONFIG
wait_for "kube-apiserver ready" 120 kubectl get --raw /readyz
start kube-controller-manager kube-controller-manager --kubeconfig="$C/controller-manager.kubeconfig" \
  --authentication-kubeconfig="$C/controller-manager.kubeconfig" --authorization-kubeconfig="$C/controller-manager.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port=20257 --leader-elect=false --use-service-account-credentials=true \
  --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
  --cluster-signing-cert-file="$P/ca.crt" --cluster-signing-key-file="$P/ca.key" \
  --service-cluster-ip-range="$SERVICE_CIDR" --controllers='*,bootstrapsigner,tokencleaner'
start kube-scheduler kube-scheduler --kubeconfig="$C/scheduler.kubeconfig" \
  --authentication-kubeconfig="$C/scheduler.kubeconfig" --authorization-kubeconfig="$C/scheduler.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port=20259 --leader-elect=false
wait_for "default ServiceAccount" 120 kubectl get sa default

# The checks below run under wait_for, which silences them: their verdicts go to fd 3 (stderr).
exec 3>&2
qemu_alive() { kill -0 "$(cat "$E2E_WORK/pids/qemu.pid")" 2>/dev/null; }
# guest_sane: qemu runs and its kernel is not wedged. A CPU soft-locked for 100 s or more does not
# come back (seen once under TCG: both vCPUs stuck in the kubelet); say so now, not at the timeout.
guest_sane() {
  qemu_alive || die "qemu exited; serial log: $(tail -20 "$E2E_WORK/serial.log")" 2>&3
  if grep -q 'soft lockup - CPU#[0-9]* stuck for [0-9]\{3,\}s' "$E2E_WORK/serial.log"; then
    grep -m 1 -A 80 'soft lockup' "$E2E_WORK/serial.log" >&3
    die "the guest kernel is wedged (soft lockup of 100 s or more; stacks above, serial log $E2E_WORK/serial.log)" 2>&3
  fi
}
node_ready() {
  guest_sane
  [ "$(kubectl get node "$E2E_NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}
wait_for "node $E2E_NODE Ready" 600 node_ready || { tail -30 "$E2E_WORK/serial.log" >&2; die "node not Ready"; }
proxy_ready() { guest_sane; grep -q 'node up' "$E2E_WORK/serial.log"; }
wait_for "kube-proxy rules in the guest" 300 proxy_ready ||
  { tail -30 "$E2E_WORK/serial.log" >&2; die "kube-proxy did not program the kubernetes Service"; }
cat > "$E2E_WORK/e2e.env" <<ENV
export KUBECONFIG=$E2E_KUBECONFIG
export RINGCAP_E2E_IMAGE_TAG=$TAG
export RINGCAP_E2E_NODE=$E2E_NODE
export RINGCAP_E2E_GUEST_SHELL=$E2E_WORK/guest-shell.sock
export RINGCAP_E2E_GUEST_SHARE=$S
ENV
log "cluster up: . $E2E_WORK/e2e.env; kubectl get nodes"
