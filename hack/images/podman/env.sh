# Shared settings for the podman scripts in this directory (sourced, not run).
# Podman keeps its images and containers in the project's cache, never in the host's default
# storage, so `rm -rf $RINGCAP_CACHE/podman` (or `make images-podman-clean`) removes all of it.
. "$(dirname "${BASH_SOURCE[0]}")/../../env.sh"
PODMAN_DIR=$RINGCAP_CACHE/podman
# Local stand-ins for the Dockerfile's public base images (hack/images/podman/bases.sh makes them).
GO_VERSION=$(go env GOVERSION | sed -E 's/^go([0-9]+\.[0-9]+).*/\1/')
BUILD_BASE=localhost/ringcap-base/golang:$GO_VERSION-bookworm
RUNTIME_BASE=localhost/ringcap-base/debian:bookworm-slim
PODMAN=(podman --root "$PODMAN_DIR/storage" --runroot "$PODMAN_DIR/run" --tmpdir "$PODMAN_DIR/tmp")
# `podman run` on these hosts: runc's default rlimits are above what the host lets a process
# raise (no CAP_SYS_RESOURCE), so every run sets nofile and nproc to values it may set.
PODMAN_RUN_OPTS=(--rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
PODMAN_RUN=("${PODMAN[@]}" run "${PODMAN_RUN_OPTS[@]}")
need_podman() {
  command -v podman >/dev/null ||
    { echo "podman not found: apt-get install podman buildah (or make setup)" >&2; exit 1; }
}
