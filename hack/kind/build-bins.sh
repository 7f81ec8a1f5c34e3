#!/usr/bin/env bash
# Builds every binary the local kind node image carries, from the Go module proxy alone (no git
# clone, no release download, no registry), each kept once built for its version:
#
#   Kubernetes $K8S_VERSION  kubeadm kubelet kubectl + the control plane's commands (hack/k8s/build-k8s.sh)
#   containerd $CONTAINERD_VERSION  containerd, containerd-shim-runc-v2, ctr (hack/containerd/build-containerd.sh)
#   crictl $CRICTL_VERSION   sigs.k8s.io/cri-tools (kubeadm and kind call it on the node)
#   etcd $ETCD_VERSION       go.etcd.io/etcd/server/v3, through a throwaway module (etcd's own
#                            go.mod replaces its sibling modules with paths, so `go install` refuses it)
#   coredns $COREDNS_VERSION github.com/coredns/coredns
#   pause                    hack/images/pause (the sandbox image)
#
# Output: $KIND_BIN (static binaries) and $KIND_K8S_BIN. Cold build on 2 cores: 20-30 minutes,
# most of it Kubernetes; the Go build cache is shared with the e2e tier's builds.
set -euo pipefail
. "$(dirname "$0")/env.sh"
cd "$KIND_REPO_ROOT"
export GOFLAGS=-buildvcs=false CGO_ENABLED=0
mkdir -p "$KIND_BIN"

K8S_DIR=$KIND_DIR/k8s-$K8S_VERSION OUT_DIR=$KIND_K8S_BIN K8S_VERSION=$K8S_VERSION hack/k8s/build-k8s.sh \
  kubeadm kubelet kubectl kube-apiserver kube-controller-manager kube-scheduler kube-proxy >&2
OUT_DIR=$KIND_CONTAINERD_BIN CONTAINERD_VERSION=$CONTAINERD_VERSION \
  hack/containerd/build-containerd.sh >&2

fresh() { [ -x "$KIND_BIN/$1" ] && [ "$(cat "$KIND_BIN/.$1.version" 2>/dev/null)" = "$2" ]; }
stamp() { echo "$2" > "$KIND_BIN/.$1.version"; }

if ! fresh crictl "$CRICTL_VERSION"; then
  kind_log "building crictl $CRICTL_VERSION"
  GOBIN=$KIND_BIN go install -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$CRICTL_VERSION" \
    "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION"
  stamp crictl "$CRICTL_VERSION"
fi

if ! fresh coredns "$COREDNS_VERSION"; then
  kind_log "building coredns $COREDNS_VERSION"
  GOBIN=$KIND_BIN go install -trimpath -ldflags "-s -w" "github.com/coredns/coredns@$COREDNS_VERSION"
  stamp coredns "$COREDNS_VERSION"
fi

if ! fresh etcd "$ETCD_VERSION"; then
  kind_log "building etcd $ETCD_VERSION"
  w=$KIND_DIR/etcd-build; rm -rf "$w"; mkdir -p "$w"
  printf 'module local/etcdbuild\n\ngo 1.24\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" > "$w/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' > "$w/tools.go"
  (cd "$w" && go mod tidy && go build -tags tools -trimpath -ldflags "-s -w" -o "$KIND_BIN/etcd" go.etcd.io/etcd/server/v3)
  stamp etcd "$ETCD_VERSION"
fi

go build -trimpath -ldflags "-s -w" -o "$KIND_BIN/pause" ./hack/images/pause
go build -o "$KIND_BIN/mkimage" ./hack/images/mkimage
kind_log "binaries ready in $KIND_BIN and $KIND_K8S_BIN"
