# Shared settings of the kind scripts in this directory (sourced, not run).
# shellcheck shell=bash
_kind_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$_kind_here/../env.sh"
export KIND_REPO_ROOT=$(cd "$_kind_here/../.." && pwd)
export K8S_VERSION=${K8S_VERSION:-v1.34.10}
export KIND_VERSION=${KIND_VERSION:-v0.33.0}
export CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.4.2}
# What kubeadm v1.34 asks for (`kubeadm config images list`); built here, tagged as it expects.
export ETCD_VERSION=${ETCD_VERSION:-v3.6.5} ETCD_TAG=${ETCD_TAG:-3.6.5-0}
export COREDNS_VERSION=${COREDNS_VERSION:-v1.12.1}
export CRICTL_VERSION=${CRICTL_VERSION:-v1.34.0}
export PAUSE_TAG=${PAUSE_TAG:-3.10.1}
export KIND_DIR=${KIND_DIR:-$RINGCAP_CACHE/kind}
# binaries built for the node image, one directory per component version. Kubernetes and
# containerd have directories of their own here so that a build for the node image never races
# the e2e tier's build of the same binaries; on a machine running one thing at a time
# KIND_K8S_BIN=$RINGCAP_CACHE/k8s/$K8S_VERSION/bin and KIND_CONTAINERD_BIN=$RINGCAP_CACHE/containerd/$CONTAINERD_VERSION/bin
# share them (build-k8s.sh then adds only kubeadm).
export KIND_BIN=$KIND_DIR/bin
export KIND_K8S_BIN=${KIND_K8S_BIN:-$KIND_DIR/k8s-$K8S_VERSION/bin}
export KIND_CONTAINERD_BIN=${KIND_CONTAINERD_BIN:-$KIND_DIR/containerd-$CONTAINERD_VERSION/bin}
export KIND_NODE_IMAGE=${KIND_NODE_IMAGE:-localhost/ringcap-kind/node:$K8S_VERSION}
# the node image as an archive (podman load / docker load), for the Soft-RoCE VM
export KIND_NODE_ARCHIVE=$KIND_DIR/node-$K8S_VERSION.tar
kind_log() { echo "kind[$(date +%T)]: $*" >&2; }
kind_die() { echo "kind: $*" >&2; exit 1; }
