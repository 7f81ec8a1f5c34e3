#!/usr/bin/env bash
# Captures the real sysfs + /dev tree of the Soft-RoCE devices (rxe0/rxe1) in the VM into
# pkg/rdma/testdata/rxe-vm/{sys,dev}, together with `ibv_devinfo -v` and `rdma link` output
# (tests compare discovery of the captured tree with them).
#
#   pkg/rdma/testdata/capture-sysfs.sh      # on the host: boots the VM (hack/vm/run.sh), captures, replaces rxe-vm/
#
# In the guest (RINGCAP_VM=1) it copies: every /sys/class/infiniband/<dev> (the class link and
# the device directory it resolves to: attributes, ports/<n>/{state,...,gids,gid_attrs}; not
# hw_counters, pkeys, power), /sys/class/infiniband_verbs/uverbs*, /sys/class/infiniband_mad/*,
# the netdevs the devices sit on (class link + top-level attributes), and the names of
# /dev/infiniband/* as empty files. Attributes whose read fails (the kernel returns EINVAL
# for the type/ndev of an empty GID entry) are not created, as discovery never reads them.
set -euo pipefail

if [ -z "${RINGCAP_VM:-}" ]; then
  HERE=$(cd "$(dirname "$0")" && pwd)
  ROOT=$(cd "$HERE/../../.." && pwd)
  share=$(mktemp -d "${RINGCAP_VM_DIR:-/var/tmp/ringcap/vm}/capture-XXXX")
  chmod 0755 "$share"
  trap 'rm -rf "$share"' EXIT
  RINGCAP_VM_SHARE=$share "$ROOT/hack/vm/run.sh" "$HERE/capture-sysfs.sh"
  [ -f "$share/capture/ibv_devinfo-v.txt" ] || { echo "capture-sysfs.sh: the guest wrote no capture" >&2; exit 1; }
  rm -rf "$HERE/rxe-vm"
  mkdir -p "$HERE/rxe-vm"
  cp -a "$share/capture/." "$HERE/rxe-vm/"
  echo "capture-sysfs.sh: wrote $HERE/rxe-vm ($(find "$HERE/rxe-vm" -type f | wc -l) files)"
  exit 0
fi

# ---- guest side (cwd = the share) ----
OUT=$PWD/capture
rm -rf "$OUT"; mkdir -p "$OUT/sys" "$OUT/dev/infiniband"

copy_link() { # /sys/... symlink: recreate it with the same (relative) target
  mkdir -p "$OUT$(dirname "$1")"
  ln -sfn "$(readlink "$1")" "$OUT$1"
}
copy_files() { # DIR MAXDEPTH: regular attribute files under DIR (absolute /sys path)
  # Reads with bash builtins (no process per file: under TCG a fork costs ~0.1 s). A read
  # that fails (EINVAL) or yields nothing creates no file. GID attributes are handled by
  # copy_gids, which reads them only for populated entries.
  local f v last=
  find "$1" -maxdepth "$2" \( -name hw_counters -o -name pkeys -o -name power -o -name subsystem \
      -o -name gid_attrs -o -name 'cm_*' \) -prune -o -type f -print |
  while read -r f; do
    case "$f" in */uevent) continue ;; esac
    v=
    { IFS= read -r -d '' v < "$f"; } 2>/dev/null || true
    [ -n "$v" ] || continue
    [ "${f%/*}" = "$last" ] || { last=${f%/*}; mkdir -p "$OUT$last"; }
    printf '%s' "$v" > "$OUT$f"
  done
  return 0
}
copy_gids() { # PORTDIR (absolute /sys path): types/ndevs of the populated GID entries
  local g i v
  mkdir -p "$OUT$1/gid_attrs/types" "$OUT$1/gid_attrs/ndevs"
  for g in "$1"/gids/*; do
    IFS= read -r v < "$g" || continue
    [ "$v" = 0000:0000:0000:0000:0000:0000:0000:0000 ] && continue
    i=${g##*/}
    for a in types ndevs; do
      v=
      { IFS= read -r v < "$1/gid_attrs/$a/$i"; } 2>/dev/null || true
      [ -n "$v" ] && printf '%s\n' "$v" > "$OUT$1/gid_attrs/$a/$i"
      [ "$a" = ndevs ] && [ -n "$v" ] && netdevs="$netdevs $v"
    done
  done
  return 0
}
copy_node() { # a /sys/class/<c>/<x> link, the directory it resolves to, and its device/driver links
  local link=$1 real
  copy_link "$link"
  real=$(readlink -f "$link")
  copy_files "$real" "${2:-6}"
  for l in device driver; do
    if [ -L "$real/$l" ]; then copy_link "$real/$l"; fi
  done
}

netdevs=""
for d in /sys/class/infiniband/*; do
  copy_node "$d" 8
  [ -f "$d/parent" ] && netdevs="$netdevs $(cat "$d/parent")"
  for p in "$(readlink -f "$d")"/ports/*; do copy_gids "$p"; done
done
for c in infiniband_verbs infiniband_mad; do
  [ -d /sys/class/$c ] || continue
  for x in /sys/class/$c/*; do
    if [ -L "$x" ]; then copy_node "$x" 1; elif [ -f "$x" ]; then copy_files "$x" 0; fi
  done
done
for n in $(echo "$netdevs" | tr ' ' '\n' | sort -u); do
  copy_node "/sys/class/net/$n" 1
done
for f in /dev/infiniband/*; do : > "$OUT/dev/infiniband/$(basename "$f")"; done

ibv_devinfo -v > "$OUT/ibv_devinfo-v.txt"
rdma link show > "$OUT/rdma-link.txt"
uname -r > "$OUT/kernel.txt"
echo "capture: $(find "$OUT" -type f | wc -l) files, $(find "$OUT" -type l | wc -l) links"
