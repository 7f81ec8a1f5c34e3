#!/usr/bin/env bash
# Writes the synthetic sysfs + /dev tree in testdata/efa (committed; re-run after editing): two
# AWS Elastic Fabric Adapters as the Linux efa driver presents them (drivers/infiniband/hw/efa
# and the RDMA core's sysfs.c, cache.c), as on an instance with two EFA interfaces:
#   efa_0  PCI 0000:10:1b.0, NUMA 0, uverbs0
#   efa_1  PCI 0000:20:1b.0, NUMA 1, uverbs1
# What the driver makes them show:
#   driver "efa" (the PCI function's driver), vendor 0x1d0f (Amazon), device 0xefa1
#   node_type "7: unspecified" (RDMA_NODE_UNSPECIFIED), node_guid all zero (never set)
#   fw_ver empty (no get_dev_fw_str), one port (phys_port_cnt 1)
#   port 1: efa_query_port always reports state "4: ACTIVE", phys_state "5: LinkUp",
#     EDR 4X ("100 Gb/sec (4X EDR)"), gid_tbl_len 1, pkey_tbl_len 1 (pkey 0xffff)
#   link_layer "Unknown": efa_port_link_layer returns IB_LINK_LAYER_UNSPECIFIED, which
#     sysfs prints as "Unknown" (ibv_devinfo prints "Unspecified")
#   gids/0: the device's EFA address (efa_query_gid), cached as a non-RoCE GID of type
#     "IB/RoCE v1" with no netdev (gid_attrs/ndevs/0 fails with EINVAL: left out here);
#     not a RoCE GID table: nothing to choose, libfabric's efa provider uses it itself
#   no net/ directory: an EFA has no netdev of its own (the ENA interface is another
#     PCI function)
#   rdma_cm present (rdma_ucm loaded); no umad/issm (no MAD support)
set -euo pipefail
cd "$(dirname "$0")"
T=efa
rm -rf "$T"
S=$T/sys D=$T/dev
mkdir -p "$S/class/infiniband" "$S/class/infiniband_verbs" "$S/bus/pci/drivers/efa" "$D/infiniband"
echo > "$S/bus/pci/drivers/efa/uevent"
echo 1 > "$S/class/infiniband_verbs/abi_version"

w() { mkdir -p "$(dirname "$1")"; printf '%s\n' "$2" > "$1"; }

efa() { # name bdf bridge numa uverbs-index gid
  local name=$1 bdf=$2 br=$3
  local P=$S/devices/pci0000:00/$br/$bdf
  mkdir -p "$P/infiniband/$name"
  ln -sfn ../../../../bus/pci/drivers/efa "$P/driver"
  w "$P/vendor" 0x1d0f; w "$P/device" 0xefa1; w "$P/numa_node" "$4"
  local I=$P/infiniband/$name
  ln -sfn ../../../$bdf "$I/device"
  w "$I/fw_ver" ""
  w "$I/node_guid" 0000:0000:0000:0000
  w "$I/sys_image_guid" 0000:0000:0000:0000
  w "$I/node_type" "7: unspecified"
  w "$I/node_desc" ""
  local Q=$I/ports/1
  w "$Q/state" "4: ACTIVE"; w "$Q/phys_state" "5: LinkUp"; w "$Q/link_layer" Unknown
  w "$Q/rate" "100 Gb/sec (4X EDR)"; w "$Q/lid" 0x0; w "$Q/sm_lid" 0x0; w "$Q/lid_mask_count" 1
  w "$Q/pkeys/0" 0xffff
  w "$Q/gids/0" "$6"
  w "$Q/gid_attrs/types/0" "IB/RoCE v1"
  mkdir -p "$Q/gid_attrs/ndevs"
  ln -sfn "../../devices/pci0000:00/$br/$bdf/infiniband/$name" "$S/class/infiniband/$name"
  w "$S/class/infiniband_verbs/uverbs$5/ibdev" "$name"; w "$S/class/infiniband_verbs/uverbs$5/abi_version" 1
  w "$S/class/infiniband_verbs/uverbs$5/dev" "231:$((192 + $5))"; : > "$D/infiniband/uverbs$5"
}

efa efa_0 0000:10:1b.0 0000:00:03.0 0 0 fe80:0000:0000:0000:04a1:b2ff:fec3:d4e5
efa efa_1 0000:20:1b.0 0000:00:04.0 1 1 fe80:0000:0000:0000:04a1:b2ff:fec3:d4e6
: > "$D/infiniband/rdma_cm"
echo "wrote $T"
