#!/usr/bin/env bash
# Writes the synthetic sysfs + /dev tree in testdata/pci (committed; re-run after editing):
#   mlx5_0  PCI 0000:03:00.0, NUMA 0, RoCE port ACTIVE on enp3s0f0 (MTU 9000) with RoCE v1+v2
#           GIDs for IPv6 link-local, IPv4, IPv6 global and a VLAN upper device enp3s0f0.100,
#           a malformed GID entry (9) and empty entries
#   mlx5_1  PCI 0000:03:00.1, port DOWN (enp3s0f1, MTU 1500); its uverbs device is uverbs4,
#           while uverbs1 belongs to "mlx5_10" (not present): exact ibdev matching matters
#   mlx5_2  PCI 0000:81:00.0, NUMA 1, InfiniBand port ACTIVE, umad0 + issm0
#   mlx5_3  node_guid missing: skipped
# Layout as the kernel makes it: class/infiniband/X -> devices/.../infiniband/X, with
# "device" -> the PCI function, "driver" -> bus/pci/drivers/mlx5_core.
set -euo pipefail
cd "$(dirname "$0")"
T=pci
rm -rf "$T"
S=$T/sys D=$T/dev
mkdir -p "$S/class/infiniband" "$S/class/infiniband_verbs" "$S/class/infiniband_mad" "$S/class/net" \
  "$S/bus/pci/drivers/mlx5_core" "$D/infiniband"
echo > "$S/bus/pci/drivers/mlx5_core/uevent"
echo 1 > "$S/class/infiniband_verbs/abi_version"

w() { mkdir -p "$(dirname "$1")"; printf '%s\n' "$2" > "$1"; }

pcidev() { # name bdf parent-bridge vendor device numa fw guid
  local name=$1 bdf=$2 br=$3
  local P=$S/devices/pci0000:00/$br/$bdf
  mkdir -p "$P/infiniband/$name"
  ln -sfn ../../../../bus/pci/drivers/mlx5_core "$P/driver"
  w "$P/vendor" "$4"; w "$P/device" "$5"; w "$P/numa_node" "$6"
  local I=$P/infiniband/$name
  ln -sfn ../../../$bdf "$I/device"
  w "$I/fw_ver" "$7"
  [ "$8" = - ] || w "$I/node_guid" "$8"
  w "$I/node_type" "1: CA"
  w "$I/sys_image_guid" "${8/-/0000:0000:0000:0000}"
  w "$I/hca_type" "MT4119"
  ln -sfn "../../devices/pci0000:00/$br/$bdf/infiniband/$name" "$S/class/infiniband/$name"
}
port() { # name bdf br port state phys linklayer rate
  local I=$S/devices/pci0000:00/$3/$2/infiniband/$1/ports/$4
  mkdir -p "$I/gids" "$I/gid_attrs/types" "$I/gid_attrs/ndevs" "$I/pkeys"
  w "$I/state" "$5"; w "$I/phys_state" "$6"; w "$I/link_layer" "$7"; w "$I/rate" "$8"
  w "$I/pkeys/0" 0xffff
}
gid() { # name bdf br port idx gid type ndev
  local I=$S/devices/pci0000:00/$3/$2/infiniband/$1/ports/$4
  w "$I/gids/$5" "$6"
  if [ "$6" != 0000:0000:0000:0000:0000:0000:0000:0000 ]; then
    w "$I/gid_attrs/types/$5" "$7"
    [ "$8" = - ] || w "$I/gid_attrs/ndevs/$5" "$8"
  fi
}
netdev() { # bdf br name mtu dev_port
  local N=$S/devices/pci0000:00/$2/$1/net/$3
  mkdir -p "$N"; w "$N/mtu" "$4"; w "$N/dev_port" "$5"; w "$N/operstate" up
  ln -sfn "../../devices/pci0000:00/$2/$1/net/$3" "$S/class/net/$3"
}
uverbs() { # n ibdev
  w "$S/class/infiniband_verbs/uverbs$1/ibdev" "$2"; w "$S/class/infiniband_verbs/uverbs$1/abi_version" 1
  w "$S/class/infiniband_verbs/uverbs$1/dev" "231:$((192 + $1))"; : > "$D/infiniband/uverbs$1"
}
mad() { # name ibdev port
  w "$S/class/infiniband_mad/$1/ibdev" "$2"; w "$S/class/infiniband_mad/$1/port" "$3"; : > "$D/infiniband/$1"
}
Z=0000:0000:0000:0000:0000:0000:0000:0000

# mlx5_0: RoCE, ACTIVE, v1+v2, IPv4/IPv6/VLAN
B=0000:00:02.0
pcidev mlx5_0 0000:03:00.0 $B 0x15b3 0x1017 0 16.35.2000 0c42:a103:0065:4f2a
port mlx5_0 0000:03:00.0 $B 1 "4: ACTIVE" "5: LinkUp" Ethernet "100 Gb/sec (4X EDR)"
netdev 0000:03:00.0 $B enp3s0f0 9000 0
mkdir -p "$S/devices/virtual/net/enp3s0f0.100"; w "$S/devices/virtual/net/enp3s0f0.100/mtu" 9000
ln -sfn ../../devices/virtual/net/enp3s0f0.100 "$S/class/net/enp3s0f0.100"
g() { gid mlx5_0 0000:03:00.0 $B 1 "$@"; }
g 0 fe80:0000:0000:0000:0e42:a1ff:fe65:4f2a "IB/RoCE v1" enp3s0f0
g 1 fe80:0000:0000:0000:0e42:a1ff:fe65:4f2a "RoCE v2" enp3s0f0
g 2 0000:0000:0000:0000:0000:ffff:0a00:0005 "IB/RoCE v1" enp3s0f0
g 3 0000:0000:0000:0000:0000:ffff:0a00:0005 "RoCE v2" enp3s0f0
g 4 2001:0db8:0001:0000:0000:0000:0000:0005 "IB/RoCE v1" enp3s0f0
g 5 2001:0db8:0001:0000:0000:0000:0000:0005 "RoCE v2" enp3s0f0
g 6 0000:0000:0000:0000:0000:ffff:0a64:0005 "IB/RoCE v1" enp3s0f0.100
g 7 0000:0000:0000:0000:0000:ffff:0a64:0005 "RoCE v2" enp3s0f0.100
g 8 $Z
g 9 "fe80:0000:zzzz:0000:0e42:a1ff:fe65:4f2a" "RoCE v2" enp3s0f0
for i in 10 11 12 13 14 15; do g $i $Z; done

# mlx5_1: port DOWN
pcidev mlx5_1 0000:03:00.1 $B 0x15b3 0x1017 0 16.35.2000 0c42:a103:0065:4f2b
port mlx5_1 0000:03:00.1 $B 1 "1: DOWN" "3: Disabled" Ethernet "10 Gb/sec (1X QDR)"
netdev 0000:03:00.1 $B enp3s0f1 1500 0
gid mlx5_1 0000:03:00.1 $B 1 0 fe80:0000:0000:0000:0e42:a1ff:fe65:4f2b "IB/RoCE v1" enp3s0f1
gid mlx5_1 0000:03:00.1 $B 1 1 fe80:0000:0000:0000:0e42:a1ff:fe65:4f2b "RoCE v2" enp3s0f1
for i in 2 3 4 5 6 7; do gid mlx5_1 0000:03:00.1 $B 1 $i $Z; done

# mlx5_2: InfiniBand
B2=0000:80:01.0
pcidev mlx5_2 0000:81:00.0 $B2 0x15b3 0x101b 1 20.39.1002 0c42:a103:0070:1b2c
port mlx5_2 0000:81:00.0 $B2 1 "4: ACTIVE" "5: LinkUp" InfiniBand "200 Gb/sec (4X HDR)"
netdev 0000:81:00.0 $B2 ib0 4092 0
gid mlx5_2 0000:81:00.0 $B2 1 0 fe80:0000:0000:0000:0c42:a103:0070:1b2c "IB/RoCE v1" -
for i in 1 2 3; do gid mlx5_2 0000:81:00.0 $B2 1 $i $Z; done

# mlx5_3: node_guid missing
pcidev mlx5_3 0000:81:00.1 $B2 0x15b3 0x101b 1 20.39.1002 -
port mlx5_3 0000:81:00.1 $B2 1 "4: ACTIVE" "5: LinkUp" Ethernet "25 Gb/sec (1X EDR)"

uverbs 0 mlx5_0
uverbs 1 mlx5_10
uverbs 2 mlx5_2
uverbs 3 mlx5_3
uverbs 4 mlx5_1
mad umad0 mlx5_2 1
mad issm0 mlx5_2 1
mad umad1 mlx5_0 1
: > "$D/infiniband/rdma_cm"
echo "wrote $T"
