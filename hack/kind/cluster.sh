# kind clusters on ringcap's local node image (sourced, not run; needs env.sh and, for podman,
# podman-env.sh's kind_podman_env). The node image carries no CNI manifest, so a cluster is made
# with networking.disableDefaultCNI and gets a bridge conflist for its node's pod CIDR (Debian's
# CNI plugins in the node); one node, so no routes between nodes are needed.
# shellcheck shell=bash

# kind_config [EXTRA_NODE_YAML]: a one-node cluster config on stdout; EXTRA_NODE_YAML is indented
# under the control-plane node (extraMounts, ...)
kind_config() {
  cat <<YAML
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
networking:
  ipFamily: ipv4
  disableDefaultCNI: true
  podSubnet: 10.244.0.0/16
  serviceSubnet: 10.96.0.0/16
nodes:
- role: control-plane
YAML
  [ -z "${1:-}" ] || printf '%s\n' "$1" | sed 's/^/  /'
}

# kind_node_exec CLUSTER CMD...: run CMD in the cluster's control-plane node
kind_node_exec() { local c=$1; shift; "$KIND_ENGINE" exec -i "$c-control-plane" "$@"; }

# kind_install_cni CLUSTER: the bridge conflist for the node's pod CIDR, then loopback
kind_install_cni() {
  local c=$1 cidr="" t0=$EPOCHSECONDS
  # the controller-manager assigns the node's pod CIDR shortly after the node registers; each
  # try is a podman exec, which takes seconds under TCG, so the wait is bounded by time
  while [ $((EPOCHSECONDS - t0)) -lt "${KIND_CIDR_WAIT:-600}" ]; do
    cidr=$(kind_node_exec "$c" kubectl --kubeconfig /etc/kubernetes/admin.conf get node "$c-control-plane" \
      -o 'jsonpath={.spec.podCIDR}' 2>/dev/null) || true
    [ -z "$cidr" ] || break
    sleep 1
  done
  [ -n "$cidr" ] || { kind_log "node $c-control-plane got no pod CIDR in $((EPOCHSECONDS - t0)) s"; return 1; }
  kind_node_exec "$c" sh -c 'cat > /etc/cni/net.d/10-ringcap-bridge.conflist' <<JSON
{"cniVersion": "0.4.0", "name": "ringcap-kind", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$cidr"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
JSON
  kind_log "bridge CNI for pod CIDR $cidr installed in $c-control-plane ($((EPOCHSECONDS - t0)) s after the node registered)"
}

# kind_wait_system CLUSTER SECONDS: the node Ready and every kube-system pod Running and ready
# (the control plane, etcd, kube-proxy, coredns: the images imported from the node image, pod
# networking through the bridge)
kind_wait_system() {
  local c=$1 secs=$2 k=(kubectl --kubeconfig /etc/kubernetes/admin.conf)
  kind_until "$secs" kind_node_exec "$c" "${k[@]}" wait --for=condition=Ready "node/$c-control-plane" --timeout=120s >&2 &&
    kind_log "node $c-control-plane Ready" &&
    kind_until "$secs" kind_node_exec "$c" "${k[@]}" -n kube-system wait --for=condition=Ready pod --all --timeout=120s >&2 ||
    { kind_log "cluster $c not ready in time:"; kind_node_exec "$c" "${k[@]}" get nodes,pods -A -o wide >&2
      kind_node_exec "$c" "${k[@]}" get events -A --sort-by=.lastTimestamp >&2; return 1; }
  kind_node_exec "$c" "${k[@]}" -n kube-system get pods -o wide >&2
}

# kind_until SECS CMD...: CMD again, 5 s after each failure, until it succeeds or SECS have
# passed since the first try (a kubectl wait that meets the API server restarting fails at
# once with a refused connection; only the deadline is a failure)
kind_until() {
  local secs=$1 t0=$EPOCHSECONDS
  shift
  until "$@"; do
    [ $((EPOCHSECONDS - t0)) -lt "$secs" ] || return 1
    sleep 5
  done
}

# kind_slow_patches DIR: kubeadm patches (DIR, mounted into the node as
# $KIND_PATCHES_IN_NODE and named in InitConfiguration.patches: kind_slow_config) for a control
# plane under emulation (TCG): the static pods' liveness and startup probes allow minutes, not
# seconds. With kubeadm's probes a busy kube-apiserver missed enough of them for the kubelet to
# restart it, and the cluster's next check met a refused connection.
KIND_PATCHES_IN_NODE=/kind/kubeadm-patches
kind_slow_patches() {
  local d=$1 c
  mkdir -p "$d"
  for c in etcd kube-apiserver kube-controller-manager kube-scheduler; do
    cat > "$d/$c+strategic.yaml" <<YAML
spec:
  containers:
  - name: $c
    livenessProbe: {timeoutSeconds: 60, periodSeconds: 30, failureThreshold: 20}
    startupProbe: {timeoutSeconds: 60, periodSeconds: 30, failureThreshold: 60}
YAML
  done
}

# kind_slow_config TIMEOUT: the kubeadmConfigPatches of a cluster under emulation (TCG). kubeadm
# init waits TIMEOUT for the control plane (its default, 4m, is shorter than etcd and
# kube-apiserver take there; kind v0.33 writes kubeadm's v1beta3 config for Kubernetes before
# v1.36) and applies kind_slow_patches. The controller-manager and scheduler run without leader
# election: one node has one of each, and under TCG their lease renewals missed the 10 s
# deadline, each loss restarted them, and the node's pod CIDR (the controller-manager's) came
# after 10 min. etcd skips fsync (a throwaway one-node cluster): under TCG its applies took up to
# 7 s after an hour, the API server went unready and the suite's requests timed out.
kind_slow_config() {
  cat <<YAML
kubeadmConfigPatches:
- |
  kind: ClusterConfiguration
  apiServer:
    timeoutForControlPlane: $1
  controllerManager:
    extraArgs:
      leader-elect: "false"
  scheduler:
    extraArgs:
      leader-elect: "false"
  etcd:
    local:
      extraArgs:
        unsafe-no-fsync: "true"
- |
  kind: InitConfiguration
  patches:
    directory: $KIND_PATCHES_IN_NODE
YAML
}
