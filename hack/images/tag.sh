#!/usr/bin/env bash
# Prints the image tag for the working tree: the short commit, with "-dirty" when files differ
# from it (so an image is never mistaken for one built from a clean commit).
set -euo pipefail
cd "$(dirname "$0")/../.."
sha=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then sha=$sha-dirty; fi
echo "$sha"
