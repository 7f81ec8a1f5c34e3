#!/bin/bash
# /usr/local/bin/kubeadm on ringcap's kind node (ahead of /usr/bin/kubeadm in PATH). kind v0.33
# writes kubeadm's v1beta3 API for Kubernetes before v1.36, which cannot set how long `kubeadm init`
# retries its own API calls (1 min from the kubelet's start): under the Soft-RoCE VM's emulated
# CPU the API server answers later. For `kubeadm init --config=F` with a v1beta3 F this migrates
# F to v1beta4 (kubeadm config migrate), gives the API calls the control plane's health-check
# timeout (apiServer.timeoutForControlPlane, KIND_KUBEADM_TIMEOUT in the harness), keeps the
# kubelet's and kube-proxy's documents (migrate drops them) and runs kubeadm on that. Any other
# command runs unchanged.
set -euo pipefail
K=/usr/bin/kubeadm
[ "${1:-}" = init ] || exec "$K" "$@"
cfg=
for a in "$@"; do case $a in --config=*) cfg=${a#--config=} ;; esac; done
{ [ -n "$cfg" ] && grep -q '^apiVersion: kubeadm.k8s.io/v1beta3' "$cfg"; } || exec "$K" "$@"
new=${cfg%.conf}-v1beta4.conf
"$K" config migrate --old-config "$cfg" --new-config "$new" 2>/dev/null
t=$(awk '$1 == "controlPlaneComponentHealthCheck:" {print $2; exit}' "$new")
[ -z "$t" ] || sed -i "s/^\( *kubernetesAPICall:\).*/\1 $t/" "$new"
awk 'BEGIN {RS = "\n---\n"} !/apiVersion: kubeadm\.k8s\.io\// {printf "---\n%s\n", $0}' "$cfg" >> "$new"
echo "ringcap kind node: $cfg migrated to $new (kubernetesAPICall ${t:-unchanged})" >&2
args=()
for a in "$@"; do case $a in --config=*) args+=("--config=$new") ;; *) args+=("$a") ;; esac; done
exec "$K" "${args[@]}"
