#!/usr/bin/env bash
# Fills a KUBEBUILDER_ASSETS directory for the envtest tier without setup-envtest (which
# downloads from a bucket this project cannot reach): kube-apiserver and
# kube-controller-manager built from the Go module proxy by build-k8s.sh, and Debian's
# etcd (package etcd-server, installed by hack/setup.sh).
#
#   ASSETS_DIR=/var/tmp/ringcap/k8s/envtest-v1.34.10 hack/k8s/envtest-assets.sh
#
# envtest starts etcd and kube-apiserver from this directory; the operator's deletion
# test also starts kube-controller-manager's garbage collector from it.
set -euo pipefail
cd "$(dirname "$0")/../.."
. hack/env.sh
K8S_VERSION=${K8S_VERSION:-v1.34.10}
export K8S_VERSION
ASSETS_DIR=${ASSETS_DIR:-$RINGCAP_CACHE/k8s/envtest-$K8S_VERSION}
BIN=${OUT_DIR:-$RINGCAP_CACHE/k8s/$K8S_VERSION/bin}

OUT_DIR=$BIN hack/k8s/build-k8s.sh kube-apiserver kube-controller-manager
etcd=$(command -v etcd || true)
[ -n "$etcd" ] || { echo "envtest-assets: etcd not found: install Debian's etcd-server (make setup)" >&2; exit 1; }

mkdir -p "$ASSETS_DIR"
ln -sfn "$BIN/kube-apiserver" "$ASSETS_DIR/kube-apiserver"
ln -sfn "$BIN/kube-controller-manager" "$ASSETS_DIR/kube-controller-manager"
ln -sfn "$etcd" "$ASSETS_DIR/etcd"
echo "envtest-assets: KUBEBUILDER_ASSETS=$ASSETS_DIR ($("$ASSETS_DIR/kube-apiserver" --version), etcd $("$etcd" --version | awk '/etcd Version/ {print $3}'))"
