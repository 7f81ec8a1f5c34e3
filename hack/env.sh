# Shared settings for ringcap's scripts (sourced, not run).
export RINGCAP_CACHE=${RINGCAP_CACHE:-/var/tmp/ringcap}
export RINGCAP_TOOLS=${RINGCAP_TOOLS:-$RINGCAP_CACHE/bin}
export PATH="$RINGCAP_TOOLS:/usr/local/go/bin:$PATH"
export GOLANGCI_LINT_VERSION=${GOLANGCI_LINT_VERSION:-v2.15.0}
