#!/usr/bin/env bash
# Installs everything ringcap's demo and test suite need on a fresh Debian bookworm
# machine (run as root), in three steps, each saying what it installs:
#   1. Debian packages (apt-get), the list below;
#   2. Go at /usr/local/go when the `go` on PATH is missing or older than go.mod's
#      (hack/install-go.sh: Go from bookworm-backports fetches go$RINGCAP_GO_VERSION from the Go module proxy);
#   3. Go tools into $RINGCAP_TOOLS (hack/install-tools.sh: golangci-lint, controller-gen, helm, kind).
# Idempotent: a second run only re-checks.
#
#   hack/setup.sh            # all three
#   SKIP_APT=1 hack/setup.sh # steps 2 and 3 only
#   SKIP_TOOLS=1 hack/setup.sh # steps 1 and 2 only
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/env.sh

if [ -z "${SKIP_APT:-}" ]; then
  export DEBIAN_FRONTEND=noninteractive
  # Packages: RDMA userspace for cgo builds and the Soft-RoCE VM (rdma-core; libfabric with its
  # providers and fi_info for pkg/rdma/ofi; iperf3, bench-ofi's TCP anchor), qemu + busybox for the VM,
  # etcd for envtest, containerd/runc/CNI for the local cluster, podman/buildah for the Dockerfile.
  pkgs=(
    build-essential git curl ca-certificates jq openssl
    libibverbs-dev librdmacm-dev rdma-core ibverbs-providers ibverbs-utils perftest rdmacm-utils
    libfabric-dev libfabric-bin iperf3
    qemu-system-x86 busybox-static kmod cpio iproute2 debootstrap podman buildah
    etcd-server containerd runc containernetworking-plugins iptables conntrack socat ethtool ebtables
  )
  missing=()
  for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -q
    echo "setup: installing ${#missing[@]} Debian packages: ${missing[*]}" >&2
    apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
fi

hack/install-go.sh

[ -n "${SKIP_TOOLS:-}" ] || hack/install-tools.sh
