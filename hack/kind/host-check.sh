#!/usr/bin/env bash
# `make kind-node-check`: proves the local kind node image on this host, without RDMA: builds it
# (build-node-image.sh), creates a one-node kind cluster with the podman provider on it, installs
# the bridge CNI and waits for the node Ready and every kube-system pod (control plane, etcd,
# kube-proxy, coredns) Running and ready, then deletes the cluster. Always restores the host, on
# failure or interrupt too: the cluster's containers and volume, the podman network this script
# made, and /lib/modules when it had to create it (kind mounts it into the node).
# Env: KIND_CHECK_CLUSTER (ringcap-kind-check), KEEP=1 leaves the cluster (delete it with
# `hack/kind/host-check.sh --down`), KIND_SLOW=1 the cluster as the Soft-RoCE VM makes it under
# TCG (kind_slow_config, kind_slow_patches), checked to be in the control plane's manifests.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/podman-env.sh"
. "$HERE/cluster.sh"
CLUSTER=${KIND_CHECK_CLUSTER:-ringcap-kind-check}
KIND_ENGINE=podman
[ "$(id -u)" = 0 ] || kind_die "the podman provider runs rootful here: run as root"
command -v podman >/dev/null || kind_die "podman not found: apt-get install podman (or make setup)"
command -v kind >/dev/null || "$KIND_REPO_ROOT/hack/install-tools.sh" >&2
kind_podman_env
KCFG=$KIND_DIR/$CLUSTER.kubeconfig # kind writes here, never to ~/.kube/config
MODS_MARK=$KIND_DIR/$CLUSTER.made-lib-modules
SNAP=$KIND_DIR/$CLUSTER.host-before

down() {
  kind delete cluster --name "$CLUSTER" --kubeconfig "$KCFG" >&2 || true
  # what kind leaves when a create fails half way
  local left; left=$(podman ps -aq --filter "label=io.x-k8s.kind.cluster=$CLUSTER")
  [ -z "$left" ] || podman rm -f -v $left >/dev/null || true
  if podman network exists "$KIND_NET" 2>/dev/null; then podman network rm -f "$KIND_NET" >/dev/null || true; fi
  rm -rf "/var/lib/cni/networks/$KIND_NET" "$KCFG" "$KIND_DIR/$CLUSTER.yaml" "$KIND_DIR/$CLUSTER-patches"
  if [ -f "$MODS_MARK" ]; then rmdir /lib/modules 2>/dev/null || true; rm -f "$MODS_MARK"; fi
  kind_host_restore "$SNAP"
  left=$(podman ps -aq --filter "label=io.x-k8s.kind.cluster=$CLUSTER")
  [ -z "$left" ] || { kind_log "containers left behind: $left"; return 1; }
}
if [ "${1:-}" = --down ]; then down; exit; fi

KIND_NODE_SAVE= "$HERE/build-node-image.sh"
rc=1
finish() {
  if [ "$rc" != 0 ]; then
    kind_log "FAILED; the node's units and the kubelet's last lines:"
    podman exec "$CLUSTER-control-plane" sh -c 'systemctl --no-pager --failed; journalctl --no-pager -u kubelet -u containerd | tail -40' >&2 2>/dev/null || true
  fi
  if [ -n "${KEEP:-}" ]; then kind_log "KEEP=1: cluster $CLUSTER left; hack/kind/host-check.sh --down removes it"
  else down || rc=1; fi
  kind_log "host check $([ "$rc" = 0 ] && echo PASSED || echo FAILED)"
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM
down >/dev/null 2>&1 || true # an earlier run's leftovers
kind_host_snapshot "$SNAP"
[ -e /lib/modules ] || { mkdir /lib/modules; touch "$MODS_MARK"; }
podman network create -d bridge --subnet "$KIND_SUBNET" "$KIND_NET" >/dev/null
t0=$SECONDS
CONFIG=$KIND_DIR/$CLUSTER.yaml
if [ -n "${KIND_SLOW:-}" ]; then
  kind_slow_patches "$KIND_DIR/$CLUSTER-patches"
  { kind_config "extraMounts:
- {hostPath: $KIND_DIR/$CLUSTER-patches, containerPath: $KIND_PATCHES_IN_NODE}"; kind_slow_config 10m; } > "$CONFIG"
else
  kind_config > "$CONFIG"
fi
kind create cluster --name "$CLUSTER" --image "$KIND_NODE_IMAGE" --kubeconfig "$KCFG" ${KEEP:+--retain} --config "$CONFIG" >&2
kind_log "kind create cluster: $((SECONDS - t0)) s"
kind_install_cni "$CLUSTER"
kind_wait_system "$CLUSTER" 300
kind_log "node Ready and kube-system up $((SECONDS - t0)) s after create"
if [ -n "${KIND_SLOW:-}" ]; then
  for c in etcd kube-apiserver kube-controller-manager kube-scheduler; do
    podman exec "$CLUSTER-control-plane" grep -q 'timeoutSeconds: 60' "/etc/kubernetes/manifests/$c.yaml" ||
      kind_die "$c's manifest lacks the slow control plane's probes (kind_slow_patches)"
  done
  podman exec "$CLUSTER-control-plane" grep -q 'leader-elect=false' /etc/kubernetes/manifests/kube-scheduler.yaml ||
    kind_die "the scheduler runs with leader election (kind_slow_config)"
  podman exec "$CLUSTER-control-plane" grep -q 'unsafe-no-fsync=true' /etc/kubernetes/manifests/etcd.yaml ||
    kind_die "etcd runs with fsync (kind_slow_config)"
  kind_log "KIND_SLOW: the control plane runs with the emulator's probes and without leader election"
fi
rc=0
