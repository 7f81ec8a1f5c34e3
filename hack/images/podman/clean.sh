#!/usr/bin/env bash
# `make images-podman-clean`: removes everything the podman scripts made: the project's podman
# storage (images, build cache, containers), the cached debootstrap root and the archives.
set -euo pipefail
. "$(dirname "$0")/env.sh"
[ -d "$PODMAN_DIR" ] || exit 0
if command -v podman >/dev/null && [ -d "$PODMAN_DIR/storage" ]; then
  # only this storage: no `podman system reset`, which also touches the host's network configs
  "${PODMAN[@]}" rm -af >/dev/null
  "${PODMAN[@]}" image unmount -a >/dev/null 2>&1 || true
  "${PODMAN[@]}" rmi -af >/dev/null
fi
rm -rf "$PODMAN_DIR"
