#!/usr/bin/env bash
# `make kind-node-image`: ringcap's kind node image, built here without a registry:
#
#   $KIND_NODE_IMAGE (localhost/ringcap-kind/node:$K8S_VERSION) in the project's podman storage
#   (hack/images/podman/env.sh), for `kind create cluster --image $KIND_NODE_IMAGE` with
#   KIND_EXPERIMENTAL_PROVIDER=podman; with KIND_NODE_SAVE=1 also $KIND_NODE_ARCHIVE (docker-archive,
#   `podman load -i` elsewhere, e.g. in the Soft-RoCE VM).
#
# Contents: hack/kind/node/Containerfile (Debian bookworm, systemd, runc, CNI plugins) + the
# binaries of build-bins.sh + the images kubeadm $K8S_VERSION runs, built here and tagged as
# `kubeadm config images list` names them (the build fails when they differ), all single-layer:
#   kube-apiserver, kube-controller-manager, kube-scheduler, etcd, coredns, pause   images of
#       the static binaries (hack/images/mkimage)
#   kube-proxy   podman build --squash-all of node/kube-proxy.Containerfile (it runs iptables)
# They reach the node already imported and unpacked: containerd-state.sh fills a containerd root
# here, which becomes the image's /var/lib/containerd (nothing is imported at boot).
# The node has no default CNI manifest and no storage provisioner: clusters set
# networking.disableDefaultCNI and install a bridge conflist (hack/kind/cluster.sh does).
# A node image already built from the same inputs is kept (REBUILD=1 forces a build).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/env.sh"
. "$KIND_REPO_ROOT/hack/images/podman/env.sh"
need_podman
[ "$(id -u)" = 0 ] || kind_die "building the node image needs root (podman's storage, debootstrap)"

"$HERE/build-bins.sh"
CTRD_BIN=$KIND_CONTAINERD_BIN
# the inputs: this directory's files, the versions, and every binary going in
inputs=$( { cat "$HERE"/node/* "$HERE"/env.sh "$HERE"/containerd-state.sh; echo "$K8S_VERSION $CONTAINERD_VERSION $ETCD_VERSION $COREDNS_VERSION $CRICTL_VERSION"
            sha256sum "$KIND_K8S_BIN"/* "$KIND_BIN"/* "$CTRD_BIN"/*; } | sha256sum | cut -c1-16)
have=$("${PODMAN[@]}" image inspect --format '{{index .Config.Labels "org.ringcap.kind-node-inputs"}}' "$KIND_NODE_IMAGE" 2>/dev/null || true)
save() {
  [ -n "${KIND_NODE_SAVE:-}" ] || return 0
  if [ "$(cat "$KIND_NODE_ARCHIVE.inputs" 2>/dev/null)" != "$inputs" ] || [ ! -s "$KIND_NODE_ARCHIVE" ]; then
    rm -f "$KIND_NODE_ARCHIVE"
    "${PODMAN[@]}" save -q --format docker-archive -o "$KIND_NODE_ARCHIVE" "$KIND_NODE_IMAGE"
    echo "$inputs" > "$KIND_NODE_ARCHIVE.inputs"
  fi
  kind_log "node image archive $KIND_NODE_ARCHIVE ($(du -m "$KIND_NODE_ARCHIVE" | cut -f1) MiB)"
}
if [ "$have" = "$inputs" ] && [ -z "${REBUILD:-}" ]; then
  kind_log "$KIND_NODE_IMAGE is up to date (inputs $inputs)"; save; exit 0
fi

"$KIND_REPO_ROOT/hack/images/podman/bases.sh"
CTX=$KIND_DIR/node-context
IMGS=$KIND_DIR/node-images
rm -rf "$CTX" "$IMGS"; mkdir -p "$CTX"/{bin,k8s,kind/bin,etc/containerd,etc/systemd/system} "$IMGS" "$PODMAN_DIR/tmp"
export TMPDIR=$PODMAN_DIR/tmp

# --- the images kubeadm runs, tagged as it names them ---
want=$("$KIND_K8S_BIN/kubeadm" config images list --kubernetes-version "$K8S_VERSION" 2>/dev/null | LC_ALL=C sort)
R=registry.k8s.io
made="$R/coredns/coredns:$COREDNS_VERSION
$R/etcd:$ETCD_TAG
$R/kube-apiserver:$K8S_VERSION
$R/kube-controller-manager:$K8S_VERSION
$R/kube-proxy:$K8S_VERSION
$R/kube-scheduler:$K8S_VERSION
$R/pause:$PAUSE_TAG"
[ "$want" = "$made" ] || kind_die "kubeadm $K8S_VERSION wants other images than this script builds:
$(diff <(echo "$want") <(echo "$made"))"
MK() { "$KIND_BIN/mkimage" -gzip-level 1 -env PATH=/usr/local/bin:/usr/bin:/bin "$@" >/dev/null; }
for c in kube-apiserver kube-controller-manager kube-scheduler; do
  MK -t "$R/$c:$K8S_VERSION" -o "$IMGS/$c.tar" -entrypoint "/usr/local/bin/$c" "$KIND_K8S_BIN/$c:/usr/local/bin/$c"
done
MK -t "$R/etcd:$ETCD_TAG" -o "$IMGS/etcd.tar" -entrypoint /usr/local/bin/etcd "$KIND_BIN/etcd:/usr/local/bin/etcd"
MK -t "$R/coredns/coredns:$COREDNS_VERSION" -o "$IMGS/coredns.tar" -entrypoint /coredns "$KIND_BIN/coredns:/coredns"
MK -t "$R/pause:$PAUSE_TAG" -o "$IMGS/pause.tar" -entrypoint /pause "$KIND_BIN/pause:/pause"
kp=$KIND_DIR/kube-proxy-context; rm -rf "$kp"; mkdir -p "$kp"; cp "$KIND_K8S_BIN/kube-proxy" "$kp/"
"${PODMAN[@]}" build --pull=never --network host -q --squash-all --build-arg "BASE=$RUNTIME_BASE" \
  -f "$HERE/node/kube-proxy.Containerfile" -t "$R/kube-proxy:$K8S_VERSION" "$kp" >/dev/null
"${PODMAN[@]}" save -q --format docker-archive -o "$IMGS/kube-proxy.tar" "$R/kube-proxy:$K8S_VERSION"
"${PODMAN[@]}" rmi -f "$R/kube-proxy:$K8S_VERSION" >/dev/null; rm -rf "$kp"
kind_log "images: $(echo $made)"
"$HERE/containerd-state.sh" "$CTX/containerd.tar" "$IMGS"/*.tar
rm -rf "$IMGS"

# --- the node's files ---
cp "$CTRD_BIN"/{containerd,containerd-shim-runc-v2,ctr} "$KIND_BIN/crictl" "$CTX/bin/"
cp "$HERE/node/entrypoint.sh" "$CTX/bin/ringcap-kind-entrypoint"
cp "$HERE/node/kubeadm.sh" "$CTX/bin/kubeadm"
cp "$KIND_K8S_BIN"/{kubeadm,kubelet,kubectl} "$CTX/k8s/"
cp "$HERE/node/config.toml" "$CTX/etc/containerd/"
cp "$HERE/node/crictl.yaml" "$CTX/etc/"
cp "$HERE"/node/{containerd.service,kubelet.service,kubelet.slice} "$CTX/etc/systemd/system/"
cp "$HERE/node/kubelet-cgroups.sh" "$CTX/kind/bin/"
echo "$K8S_VERSION" > "$CTX/kind/version"
kind_log "podman build $KIND_NODE_IMAGE"
prev=$("${PODMAN[@]}" image inspect --format '{{.Id}}' "$KIND_NODE_IMAGE" 2>/dev/null || true)
"${PODMAN[@]}" build --pull=never --network host -q --build-arg "BASE=$RUNTIME_BASE" \
  --label "org.ringcap.kind-node-inputs=$inputs" -f "$HERE/node/Containerfile" -t "$KIND_NODE_IMAGE" "$CTX" >/dev/null
rm -rf "$CTX"
# the image this one replaces (about 1 GiB), unless a container still uses it
[ -z "$prev" ] || "${PODMAN[@]}" rmi "$prev" >/dev/null 2>&1 || true
kind_log "$KIND_NODE_IMAGE built ($("${PODMAN[@]}" image inspect --format '{{.Size}}' "$KIND_NODE_IMAGE" | awk '{printf "%d MiB", $1/1048576}'))"
save
