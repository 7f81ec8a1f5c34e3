# Shared settings of the e2e harness (sourced by the scripts in this directory).
# shellcheck shell=bash
_e2e_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
. "$_e2e_root/hack/env.sh"
export REPO_ROOT=$_e2e_root
export E2E_WORK=${E2E_WORK:-$RINGCAP_CACHE/e2e}
# Kubernetes v1.34.10 binaries (hack/k8s/build-k8s.sh builds them from the Go module proxy)
export K8S_VERSION=${K8S_VERSION:-v1.34.10}
export K8S_BIN=${K8S_BIN:-$RINGCAP_CACHE/k8s/$K8S_VERSION/bin}
# The node's container runtime: 2 = containerd 2.x (CDI, which the DRA driver needs) built from the
# Go module proxy by hack/containerd/build-containerd.sh; 1 = the guest root's Debian containerd 1.6.
export E2E_CONTAINERD=${E2E_CONTAINERD:-2}
export CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.4.2}
export CONTAINERD_BIN=${CONTAINERD_BIN:-$RINGCAP_CACHE/containerd/$CONTAINERD_VERSION/bin}
export PATH=$K8S_BIN:$PATH:/usr/sbin:/sbin
# Split layout: the control plane runs natively on this host, the node (containerd, kubelet,
# kube-proxy, every pod) inside the Soft-RoCE VM, joined by a tap on a private /30.
export E2E_TAP=${E2E_TAP:-rcape2e0}
export E2E_HOST_IP=${E2E_HOST_IP:-10.203.0.1}
export E2E_GUEST_IP=${E2E_GUEST_IP:-10.203.0.2}
export E2E_ETCD_PORT=${E2E_ETCD_PORT:-22379}
export E2E_NODE=${E2E_NODE:-ringcap-e2e}
export E2E_MEM=${E2E_MEM:-3072}
export SERVICE_CIDR=10.0.0.0/24 POD_CIDR=10.88.0.0/16 DNS_SERVICE_IP=10.0.0.10
export E2E_KUBECONFIG=$E2E_WORK/admin.kubeconfig
_e2e_t0=${_e2e_t0:-$EPOCHREALTIME}; export _e2e_t0
log() { awk -v a="$EPOCHREALTIME" -v b="$_e2e_t0" -v m="$*" 'BEGIN{printf "[e2e %6.1fs] %s\n", a-b, m}' >&2; }
die() { log "FAIL: $*"; exit 1; }
# wait_for WHAT SECONDS CMD...: poll CMD every 0.5 s
wait_for() {
  local what=$1 secs=$2; shift 2
  local end=$(( ${EPOCHSECONDS} + secs ))
  until "$@" >/dev/null 2>&1; do
    [ "$EPOCHSECONDS" -lt "$end" ] || { log "timeout after ${secs}s waiting for $what"; return 1; }
    sleep 0.5
  done
  log "$what"
}
