#!/usr/bin/env bash
# Builds Kubernetes commands (default: kube-apiserver and kube-controller-manager, what
# the envtest tier needs) from the Go module proxy alone: no git clone, no release
# download, no container registry.
#
#   hack/k8s/build-k8s.sh [cmd ...]     # e.g. kube-apiserver kubectl
#
# How: a throwaway module requires k8s.io/kubernetes $K8S_VERSION and replaces every
# staging module (which kubernetes' own go.mod points at ./staging/...) with its published
# v0.X.Y tag; a tools.go imports the wanted commands. Static binaries (CGO_ENABLED=0),
# -trimpath, and the version ldflags `make release` would set, so /version is right.
# A binary already built for this version is kept (delete $OUT_DIR to force a rebuild).
#
# Output: $OUT_DIR (default /var/tmp/ringcap/k8s/$K8S_VERSION/bin). Cold build of
# kube-apiserver + kube-controller-manager on 2 cores: about 8 minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
. hack/env.sh
K8S_VERSION=${K8S_VERSION:-v1.34.10}
STAGING_VERSION=v0.${K8S_VERSION#v1.}
K8S_DIR=${K8S_DIR:-$RINGCAP_CACHE/k8s/$K8S_VERSION}
OUT_DIR=${OUT_DIR:-$K8S_DIR/bin}
WORK=$K8S_DIR/build
CMDS=("$@")
[ ${#CMDS[@]} -gt 0 ] || CMDS=(kube-apiserver kube-controller-manager)

todo=()
for c in "${CMDS[@]}"; do
  if [ -x "$OUT_DIR/$c" ] && [ "$(cat "$OUT_DIR/.$c.version" 2>/dev/null)" = "$K8S_VERSION" ]; then continue; fi
  todo+=("$c")
done
[ ${#todo[@]} -gt 0 ] || { echo "build-k8s: ${CMDS[*]} $K8S_VERSION already in $OUT_DIR"; exit 0; }

mkdir -p "$WORK" "$OUT_DIR"
cd "$WORK"
export GOFLAGS=-buildvcs=false CGO_ENABLED=0

echo "build-k8s: fetching k8s.io/kubernetes@$K8S_VERSION's go.mod from the module proxy"
modfile=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
[ -f "$modfile" ] || { echo "build-k8s: no go.mod for k8s.io/kubernetes@$K8S_VERSION" >&2; exit 1; }
gover=$(awk '$1 == "go" {print $2; exit}' "$modfile")

{
  printf 'module local/k8sbuild\n\ngo %s\n\nrequire k8s.io/kubernetes %s\n\n' "$gover" "$K8S_VERSION"
  # k8s.io/X => ./staging/src/k8s.io/X  becomes  k8s.io/X => k8s.io/X v0.Y.Z. The two
  # sample modules are not published on the proxy and no command imports them.
  awk -v v="$STAGING_VERSION" '$2 == "=>" && $3 ~ /^\.\/staging\// && $1 !~ /sample-(cli-plugin|controller)/ {
      print "replace " $1 " => " $1 " " v }' "$modfile"
} > go.mod
{
  printf '//go:build tools\n\npackage tools\n\nimport (\n'
  for c in "${todo[@]}"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c"; done
  printf ')\n'
} > tools.go

echo "build-k8s: resolving modules"
go mod tidy

pkg=k8s.io/component-base/version
minor=$(echo "$K8S_VERSION" | cut -d. -f2)
ldflags="-s -w -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
pkgs=()
for c in "${todo[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
echo "build-k8s: building ${todo[*]} $K8S_VERSION (minutes on a cold build cache)"
start=$SECONDS
go build -tags tools -trimpath -ldflags "$ldflags" -o "$OUT_DIR/" "${pkgs[@]}"
for c in "${todo[@]}"; do echo "$K8S_VERSION" > "$OUT_DIR/.$c.version"; done
echo "build-k8s: built ${todo[*]} in $((SECONDS - start)) s into $OUT_DIR"
