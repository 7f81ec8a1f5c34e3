# kind with the podman provider, confined to the project (sourced, not run): kind calls `podman`
# itself, so the settings go through podman's own environment variables, written here:
#   CONTAINERS_STORAGE_CONF  the project's podman storage ($RINGCAP_CACHE/podman, hack/images/podman/env.sh)
#   CONTAINERS_CONF          default ulimits for every container ($KIND_PODMAN_ULIMITS: on hosts
#                            whose processes lack CAP_SYS_RESOURCE runc cannot raise rlimits and
#                            podman's defaults fail, so the default is this shell's hard open-files
#                            limit and 16384 processes, which runc may set), the network configs in the cache
#                            (not /etc/cni/net.d), podman's temporary dir as env.sh has it
#   KIND_EXPERIMENTAL_PODMAN_NETWORK  a network this project creates and removes ($KIND_NET,
#                            IPv4 only, subnet $KIND_SUBNET) instead of kind's shared "kind"
# shellcheck shell=bash
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
# the storage of hack/images/podman/env.sh (not sourced here: this file also runs in the
# Soft-RoCE VM, which has no Go toolchain)
PODMAN_DIR=${PODMAN_DIR:-$RINGCAP_CACHE/podman}
export KIND_NET=${KIND_NET:-ringcap-kind} KIND_SUBNET=${KIND_SUBNET:-10.204.0.0/24}
_kind_nofile=$(ulimit -Hn); [ "$_kind_nofile" != unlimited ] || _kind_nofile=1048576
KIND_PODMAN_ULIMITS=${KIND_PODMAN_ULIMITS:-nofile=$_kind_nofile:$_kind_nofile nproc=16384:16384}
KIND_PODMAN_CONF=$KIND_DIR/podman
kind_podman_env() {
  mkdir -p "$KIND_PODMAN_CONF/networks" "$PODMAN_DIR/storage" "$PODMAN_DIR/run" "$PODMAN_DIR/tmp"
  cat > "$KIND_PODMAN_CONF/storage.conf" <<CONF
[storage]
driver = "overlay"
graphroot = "$PODMAN_DIR/storage"
runroot = "$PODMAN_DIR/run"
CONF
  local u q=()
  for u in $KIND_PODMAN_ULIMITS; do q+=("\"$u\""); done
  cat > "$KIND_PODMAN_CONF/containers.conf" <<CONF
[containers]
default_ulimits = [$(IFS=,; echo "${q[*]}")]
[network]
network_backend = "cni"
network_config_dir = "$KIND_PODMAN_CONF/networks"
[engine]
tmp_dir = "$PODMAN_DIR/tmp"
# no systemd as PID 1 here (CI hosts, the Soft-RoCE VM): cgroups directly, events to a file
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
  export CONTAINERS_STORAGE_CONF=$KIND_PODMAN_CONF/storage.conf CONTAINERS_CONF=$KIND_PODMAN_CONF/containers.conf
  export KIND_EXPERIMENTAL_PROVIDER=podman KIND_EXPERIMENTAL_PODMAN_NETWORK=$KIND_NET TMPDIR=$PODMAN_DIR/tmp
}

# What podman's CNI plugins leave on the host for good once a container with a published port ran:
# the plugins' own iptables chains (CNI-FORWARD, CNI-ADMIN, CNI-HOSTPORT-*) and /var/lib/cni.
# kind_host_snapshot FILE records which of them exist (kept when FILE exists: an earlier run's
# record); kind_host_restore FILE removes those it did not see, then FILE.
kind_host_snapshot() {
  [ ! -s "$1" ] || return 0
  local chains dir=no
  chains=$( { iptables-save -t filter; iptables-save -t nat; } 2>/dev/null | awk '/^:CNI-/ {print substr($1, 2)}' | sort -u | paste -sd' ')
  [ ! -e /var/lib/cni ] || dir=yes
  printf 'KIND_HOST_CHAINS="%s"\nKIND_HOST_CNI_DIR=%s\n' "$chains" "$dir" > "$1"
}
kind_host_restore() {
  [ -s "$1" ] || return 0
  local t line ch KIND_HOST_CHAINS KIND_HOST_CNI_DIR
  . "$1"
  for t in filter nat; do
    # rules in the built-in chains that jump to a chain that was not there before, then the chains
    iptables-save -t "$t" 2>/dev/null | grep -E '^-A [A-Z]+ .*-j CNI-' | while read -r line; do
      ch=${line##*-j }; ch=${ch%% *}
      case " $KIND_HOST_CHAINS " in *" $ch "*) continue ;; esac
      eval "iptables -t $t ${line/#-A/-D}" 2>/dev/null || true
    done
    for ch in $(iptables-save -t "$t" 2>/dev/null | awk '/^:CNI-/ {print substr($1, 2)}'); do
      case " $KIND_HOST_CHAINS " in *" $ch "*) continue ;; esac
      iptables -t "$t" -F "$ch" 2>/dev/null || true
    done
    for ch in $(iptables-save -t "$t" 2>/dev/null | awk '/^:CNI-/ {print substr($1, 2)}'); do
      case " $KIND_HOST_CHAINS " in *" $ch "*) continue ;; esac
      iptables -t "$t" -X "$ch" 2>/dev/null || true
    done
  done
  if [ "$KIND_HOST_CNI_DIR" = no ]; then
    find /var/lib/cni -depth -type d -empty -delete 2>/dev/null || true
  fi
  rm -f "$1"
}
