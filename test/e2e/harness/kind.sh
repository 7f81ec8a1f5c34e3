#!/usr/bin/env bash
# `make e2e-kind`: the same client-go suite on a kind cluster, for users with Docker. It cannot run
# on ringcap's CI machines (no Docker engine, no registry) and is not part of `make test-all`.
#
# What it does: checks for Docker and for Soft-RoCE (or real RDMA) on the host, creates a kind
# cluster whose node maps /dev/infiniband (rxe must exist before the cluster starts: rdma devices
# are not namespaced, the node container sees the host's), builds the images (Docker targets of
# the Dockerfile), loads them with `kind load`, and runs test/e2e (which installs the chart).
#
#   sudo modprobe rdma_rxe && sudo rdma link add rxe0 type rxe netdev eth0   # once, on the host
#   make e2e-kind                        # KIND_CLUSTER (ringcap-e2e), KEEP=1 keeps the cluster
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/common.sh"
CLUSTER=${KIND_CLUSTER:-ringcap-e2e}
command -v docker >/dev/null && docker info >/dev/null 2>&1 ||
  die "e2e-kind needs a running Docker engine (docker info failed). On machines without Docker use 'make e2e' (Soft-RoCE VM)."
command -v kind >/dev/null || die "kind not found: go install sigs.k8s.io/kind@v0.33.0"
devs=$(ls /sys/class/infiniband 2>/dev/null || true)
[ -n "$devs" ] && [ -e /dev/infiniband/rdma_cm ] ||
  die "no RDMA device on this host: load Soft-RoCE first (modprobe rdma_rxe rdma_ucm; rdma link add rxe0 type rxe netdev <if>)"
log "RDMA devices: $(echo $devs)"
TAG=${TAG:-$("$REPO_ROOT/hack/images/tag.sh")}
for t in plugin operator ringcap; do
  docker build -q --target "$t" --build-arg "VERSION=$TAG" -t "ringcap/$t:$TAG" "$REPO_ROOT" >/dev/null
done
log "images ringcap/{plugin,operator,ringcap}:$TAG built"
cfg=$(mktemp); trap 'rm -f "$cfg"' EXIT
cat > "$cfg" <<YAML
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
- role: control-plane
  extraMounts:
  - {hostPath: /dev/infiniband, containerPath: /dev/infiniband}
YAML
kind get clusters | grep -qx "$CLUSTER" || kind create cluster --name "$CLUSTER" --config "$cfg" --wait 120s
cleanup() { rm -f "$cfg"; [ -n "${KEEP:-}" ] || kind delete cluster --name "$CLUSTER"; }
trap cleanup EXIT
for t in plugin operator ringcap; do kind load docker-image --name "$CLUSTER" "ringcap/$t:$TAG"; done
export KUBECONFIG=$E2E_WORK/kind.kubeconfig
mkdir -p "$E2E_WORK"; kind get kubeconfig --name "$CLUSTER" > "$KUBECONFIG"
export RINGCAP_E2E_IMAGE_TAG=$TAG RINGCAP_E2E_NODE=$CLUSTER-control-plane
cd "$REPO_ROOT/test/e2e" && go test -tags e2e -count=1 -v -timeout 25m .
