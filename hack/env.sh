# Shared settings for ringcap's scripts (sourced, not run).
export RINGCAP_CACHE=${RINGCAP_CACHE:-/var/tmp/ringcap}
export RINGCAP_TOOLS=${RINGCAP_TOOLS:-$RINGCAP_CACHE/bin}
export PATH="$RINGCAP_TOOLS:/usr/local/go/bin:$PATH"
# The Go toolchain hack/install-go.sh installs at /usr/local/go when go is missing or older than go.mod.
export RINGCAP_GO_VERSION=${RINGCAP_GO_VERSION:-1.26.8}
export GOLANGCI_LINT_VERSION=${GOLANGCI_LINT_VERSION:-v2.15.0}
