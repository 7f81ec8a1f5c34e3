#!/bin/bash
# ringcap-kind-images.service: imports the image archives baked into the node image
# (/kind/images/*.tar: the control plane, etcd, coredns, kube-proxy and pause, all built locally)
# into containerd's k8s.io namespace before the kubelet starts. Nothing is pulled.
# `import-images.sh --wait` (the kubelet's ExecStartPre) waits up to 10 minutes for the import.
set -euo pipefail
done=/run/ringcap-kind/images-imported
if [ "${1:-}" = --wait ]; then
  for _ in $(seq 600); do [ -e $done ] && exit 0; sleep 1; done
  echo "the node's images were not imported (systemctl status ringcap-kind-images)" >&2; exit 1
fi
mkdir -p /run/ringcap-kind
for t in /kind/images/*.tar; do
  ctr --namespace=k8s.io images import --snapshotter=overlayfs "$t" >/dev/null
  echo "imported $t"
done
touch $done
