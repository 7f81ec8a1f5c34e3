#!/usr/bin/env bash
# Installs the Go tools ringcap's make targets use into $RINGCAP_TOOLS, via `go install`
# (the Go module proxy is the only source). Skips tools already at the wanted version.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/env.sh
mkdir -p "$RINGCAP_TOOLS"

install_tool() { # name module@version
  local name=$1 mod=$2 stamp="$RINGCAP_TOOLS/.$1.version"
  if [ -x "$RINGCAP_TOOLS/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$mod" ]; then return; fi
  echo "installing $mod"
  GOBIN="$RINGCAP_TOOLS" GOFLAGS=-buildvcs=false go install "$mod"
  echo "$mod" > "$stamp"
}

install_tool golangci-lint "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION"
install_tool controller-gen "sigs.k8s.io/controller-tools/cmd/controller-gen@${CONTROLLER_GEN_VERSION:-v0.23.0}"
install_tool helm "helm.sh/helm/v3/cmd/helm@${HELM_VERSION:-v3.22.0}"
install_tool kind "sigs.k8s.io/kind@${KIND_VERSION:-v0.33.0}"

# promtool (the alert rules' check and unit tests) and the prometheus server binary (the e2e
# suite runs it inside the node VM to see the alerts fire) from Debian's prometheus package,
# unpacked rather than installed: installing it would also set up a Prometheus service here.
install_promtool() {
  local stamp="$RINGCAP_TOOLS/.promtool.version" ver tmp
  ver=$(apt-cache policy prometheus 2>/dev/null | awk '/Candidate:/ {print $2}')
  [ -n "$ver" ] && [ "$ver" != "(none)" ] || { echo "install-tools: Debian's prometheus package is not in the apt lists (apt-get update)" >&2; return 1; }
  if [ -x "$RINGCAP_TOOLS/promtool" ] && [ -x "$RINGCAP_TOOLS/prometheus" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$ver" ]; then return; fi
  echo "installing promtool and prometheus from Debian's prometheus $ver"
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download -q "prometheus=$ver" >/dev/null && dpkg-deb -x prometheus_*.deb root)
  install -m 0755 "$tmp/root/usr/bin/promtool" "$RINGCAP_TOOLS/promtool"
  install -m 0755 "$tmp/root/usr/bin/prometheus" "$RINGCAP_TOOLS/prometheus"
  rm -rf "$tmp"
  echo "$ver" > "$stamp"
}
install_promtool
