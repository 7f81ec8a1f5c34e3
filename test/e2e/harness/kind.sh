#!/usr/bin/env bash
# The kind path of the e2e tier: one script, where kind runs, for both providers.
#
#   make e2e-kind      on a user's Linux machine with Docker and Soft-RoCE (or an RDMA NIC):
#                      kind's public node image, ringcap's images built with `docker build`
#   make e2e-kind-vm   on ringcap's CI machines (no Docker, no RDMA on the host): the Soft-RoCE
#                      VM (kind-vm.sh) runs `kind.sh up` with podman on ringcap's local node image
#                      (hack/kind/build-node-image.sh) and the images' archives; the suite runs on
#                      the host against the cluster's API server on the VM's address
#
#   kind.sh [run]   checks, up, the client-go suite of test/e2e, down (always, unless KEEP=1)
#   kind.sh up      checks, creates the cluster (/dev/infiniband mapped into the node; rxe must
#                   exist before: RDMA devices are not namespaced, the node sees the host's),
#                   loads ringcap's images, writes $KIND_KUBECONFIG and $KIND_ENV (for the suite)
#   kind.sh down    deletes the cluster (and with podman the network this script made)
#
# Env: KIND_ENGINE docker|podman (default docker), KIND_CLUSTER (ringcap-e2e), KIND_NODE_IMAGE
# (default with docker: kind's own; with podman: ringcap's local one), KIND_IMAGES_DIR (podman:
# plugin.tar operator.tar ringcap.tar and TAG, as `make images-podman` writes them),
# KIND_API_ADDRESS (where the API server listens, default 127.0.0.1), KIND_SHARE_CDI, E2E_RUN,
# KEEP.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
USER_NODE_IMAGE=${KIND_NODE_IMAGE:-}
. "$HERE/common.sh"
. "$REPO_ROOT/hack/kind/env.sh"
. "$REPO_ROOT/hack/kind/cluster.sh"
CMD=${1:-run}
KIND_ENGINE=${KIND_ENGINE:-docker}
CLUSTER=${KIND_CLUSTER:-ringcap-e2e}
KIND_WORK=${KIND_WORK:-$E2E_WORK/kind}
KIND_KUBECONFIG=${KIND_KUBECONFIG:-$KIND_WORK/$CLUSTER.kubeconfig}
KIND_ENV=${KIND_ENV:-$KIND_WORK/$CLUSTER.env}
mkdir -p "$KIND_WORK"
if [ "$KIND_ENGINE" = podman ]; then . "$REPO_ROOT/hack/kind/podman-env.sh"; fi

# --- prerequisites: each missing one is one message saying what to install or load ---
need_engine() {
  case $KIND_ENGINE in
    docker)
      command -v docker >/dev/null || die "Docker not found: install Docker Engine (https://docs.docker.com/engine/install/), or use podman: KIND_ENGINE=podman"
      docker info >/dev/null 2>&1 || die "Docker is installed but 'docker info' fails: start the engine (sudo systemctl start docker) or add yourself to the docker group" ;;
    podman)
      command -v podman >/dev/null || die "podman not found: sudo apt-get install podman (Debian/Ubuntu) or dnf install podman"
      [ "$(id -u)" = 0 ] || die "the podman provider runs rootful here (the node maps /dev/infiniband): run as root" ;;
    *) die "KIND_ENGINE=$KIND_ENGINE: want docker or podman" ;;
  esac
  command -v kind >/dev/null || die "kind not found: make setup installs sigs.k8s.io/kind@$KIND_VERSION into $RINGCAP_TOOLS (or: go install sigs.k8s.io/kind@$KIND_VERSION)"
}
need_rdma() {
  local devs
  devs=$(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ' || true)
  if [ -z "$devs" ]; then
    if [ ! -d /sys/module/rdma_rxe ] && ! modinfo rdma_rxe >/dev/null 2>&1; then
      die "this kernel ($(uname -r)) has no rdma_rxe module (Soft-RoCE) and no RDMA device: use a kernel built with CONFIG_RDMA_RXE=m (Debian's, Ubuntu's, Fedora's are) or a machine with an RDMA NIC"
    fi
    [ -d /sys/module/rdma_rxe ] || die "rdma_rxe is not loaded: sudo modprobe rdma_rxe ib_uverbs rdma_ucm, then sudo rdma link add rxe0 type rxe netdev <interface> (docs/kind.md)"
    die "rdma_rxe is loaded but there is no RDMA device: sudo rdma link add rxe0 type rxe netdev <interface> (docs/kind.md)"
  fi
  ls /dev/infiniband/uverbs* >/dev/null 2>&1 ||
    die "RDMA devices ($devs) but no /dev/infiniband/uverbs*: sudo modprobe ib_uverbs rdma_ucm"
  log "RDMA devices: $devs"
}

cluster_config() {
  local extra="extraMounts:
- {hostPath: /dev/infiniband, containerPath: /dev/infiniband}"
  # KIND_SHARE_CDI=1 (the Soft-RoCE VM): the node's CDI spec dir is the host's /run/cdi, so the
  # suite's shell on the host sees the DRA driver's claim specs where the split layout's node has them
  [ -z "${KIND_SHARE_CDI:-}" ] || extra+="
- {hostPath: /run/cdi, containerPath: /run/cdi}"
  # KIND_KUBEADM_TIMEOUT (TCG): the control plane's kubeadm patches (kind_slow_patches)
  [ -z "${KIND_KUBEADM_TIMEOUT:-}" ] || { kind_slow_patches "$KIND_WORK/kubeadm-patches" && extra+="
- {hostPath: $KIND_WORK/kubeadm-patches, containerPath: $KIND_PATCHES_IN_NODE}"; }
  if [ "$KIND_ENGINE" = podman ]; then
    kind_config "$extra" | sed "s|^networking:|networking:\n  apiServerAddress: ${KIND_API_ADDRESS:-127.0.0.1}\n  apiServerPort: 6443|"
    # KIND_KUBEADM_TIMEOUT (the Soft-RoCE VM, TCG): a control plane under emulation
    # (kind_slow_config in hack/kind/cluster.sh)
    [ -z "${KIND_KUBEADM_TIMEOUT:-}" ] || kind_slow_config "$KIND_KUBEADM_TIMEOUT"
  else
    cat <<YAML
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
networking:
  apiServerAddress: ${KIND_API_ADDRESS:-127.0.0.1}
nodes:
- role: control-plane
  extraMounts:
  - {hostPath: /dev/infiniband, containerPath: /dev/infiniband}
YAML
  fi
}

load_images() { # sets TAG
  if [ "$KIND_ENGINE" = docker ]; then
    TAG=${TAG:-$("$REPO_ROOT/hack/images/tag.sh")}
    for t in plugin operator ringcap; do
      docker build -q --target "$t" --build-arg "VERSION=$TAG" -t "ringcap/$t:$TAG" "$REPO_ROOT" >/dev/null
      kind load docker-image --name "$CLUSTER" "ringcap/$t:$TAG" >&2
    done
  else
    local d=${KIND_IMAGES_DIR:?KIND_IMAGES_DIR: the directory of plugin.tar, operator.tar, ringcap.tar and TAG}
    TAG=$(cat "$d/TAG")
    for t in plugin operator ringcap; do
      kind load image-archive --name "$CLUSTER" "$d/$t.tar" >&2 || { log "kind load image-archive $d/$t.tar failed"; return 1; }
      log "image ringcap/$t:$TAG loaded"
    done
  fi
  log "images ringcap/{plugin,operator,ringcap}:$TAG loaded into $CLUSTER-control-plane"
}

up() {
  need_engine; need_rdma
  local args=(--name "$CLUSTER" --kubeconfig "$KIND_KUBECONFIG" --config "$KIND_WORK/$CLUSTER.yaml")
  cluster_config > "$KIND_WORK/$CLUSTER.yaml"
  if [ "$KIND_ENGINE" = podman ]; then
    kind_podman_env
    podman network exists "$KIND_NET" || podman network create -d bridge --subnet "$KIND_SUBNET" "$KIND_NET" >/dev/null
    args+=(--image "$KIND_NODE_IMAGE")
  else
    args+=(${USER_NODE_IMAGE:+--image "$USER_NODE_IMAGE"})
  fi
  log "kind create cluster ($KIND_ENGINE)"
  # --retain: a node that failed to come up stays for its logs (kind_failure_logs); down deletes it
  kind create cluster --retain "${args[@]}" >&2 || { kind_failure_logs; return 1; }
  # kind's own node images bring their CNI (kindnetd); ringcap's local one has none (cluster.sh)
  log "cluster $CLUSTER created; waiting for its pod CIDR, then the node and kube-system ready"
  [ "$KIND_ENGINE" != podman ] || kind_install_cni "$CLUSTER"
  kind_wait_system "$CLUSTER" "${KIND_SYSTEM_WAIT:-600}"
  log "cluster $CLUSTER up"
  load_images
  local devs; devs=$(ls /sys/class/infiniband | paste -sd, || true)
  # RINGCAP_E2E_NODE_CONTAINER: the node is a container, whose network namespace holds none of
  # the host's netdevs (and rxe serves only netdevs in the host's own), so the suite checks that
  # Host-mode captures fail saying so instead of streaming (test/e2e/network_test.go)
  cat > "$KIND_ENV" <<ENV
export KUBECONFIG=$KIND_KUBECONFIG RINGCAP_E2E_IMAGE_TAG=$TAG RINGCAP_E2E_NODE=$CLUSTER-control-plane RINGCAP_E2E_DEVICES=$devs RINGCAP_E2E_NODE_CONTAINER=1
ENV
}
kind_install_cni_if_local() {
  # kind's own node images bring kindnetd; ringcap's local one has no CNI manifest (cluster.sh)
  if [ "${KIND_ENGINE_NAME:-$KIND_ENGINE}" = podman ] || [ -n "${KIND_LOCAL_CNI:-}" ]; then kind_install_cni "$CLUSTER"; fi
}

# kind_failure_logs: why the node did not come up: kind's export of its logs under $KIND_WORK,
# and the tail of the node's containerd and kubelet journal on stderr
kind_failure_logs() {
  local n=$CLUSTER-control-plane
  log "kind create cluster failed; node logs in $KIND_WORK/logs-$CLUSTER"
  kind export logs --name "$CLUSTER" "$KIND_WORK/logs-$CLUSTER" >/dev/null 2>&1 || true
  "$KIND_ENGINE" ps -a >&2 || true
  "$KIND_ENGINE" exec "$n" crictl ps -a >&2 || true
  "$KIND_ENGINE" exec "$n" journalctl --no-pager -n 60 -u containerd -u kubelet >&2 || true
}

down() {
  command -v kind >/dev/null || return 0
  [ "$KIND_ENGINE" != podman ] || kind_podman_env
  kind delete cluster --name "$CLUSTER" --kubeconfig "$KIND_KUBECONFIG" >&2 || true
  if [ "$KIND_ENGINE" = podman ]; then
    local left; left=$(podman ps -aq --filter "label=io.x-k8s.kind.cluster=$CLUSTER")
    [ -z "$left" ] || podman rm -f -v $left >/dev/null || true
    if podman network exists "$KIND_NET" 2>/dev/null; then podman network rm -f "$KIND_NET" >/dev/null || true; fi
  fi
  rm -f "$KIND_KUBECONFIG" "$KIND_ENV"
}

case $CMD in
  up) up ;;
  down) down ;;
  run)
    rc=1
    finish() { if [ -z "${KEEP:-}" ]; then down; else log "KEEP=1: cluster $CLUSTER left running; '$0 down' deletes it"; fi
               log "e2e-kind $([ "$rc" = 0 ] && echo PASSED || echo FAILED)"; exit "$rc"; }
    trap finish EXIT; trap 'exit 130' INT TERM
    (cd "$REPO_ROOT" && go test -tags e2e -c -o "$KIND_WORK/e2e.test" ./test/e2e) || exit 1
    up
    . "$KIND_ENV"
    cd "$REPO_ROOT/test/e2e" && "$KIND_WORK/e2e.test" -test.v -test.count=1 -test.timeout "${E2E_TIMEOUT:-25m}" ${E2E_RUN:+-test.run "$E2E_RUN"}
    rc=$? ;;
  *) die "usage: kind.sh [run|up|down]" ;;
esac
