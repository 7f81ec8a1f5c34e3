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
  kind_node_exec "$c" "${k[@]}" wait --for=condition=Ready "node/$c-control-plane" --timeout="${secs}s" >&2 &&
    kind_log "node $c-control-plane Ready" &&
    kind_node_exec "$c" "${k[@]}" -n kube-system wait --for=condition=Ready pod --all --timeout="${secs}s" >&2 ||
    { kind_log "cluster $c not ready in time:"; kind_node_exec "$c" "${k[@]}" get nodes,pods -A -o wide >&2
      kind_node_exec "$c" "${k[@]}" get events -A --sort-by=.lastTimestamp >&2; return 1; }
  kind_node_exec "$c" "${k[@]}" -n kube-system get pods -o wide >&2
}
