#!/bin/bash
# Runs in the e2e VM as PID 1 (the initramfs switch_roots into the 9p root and execs this from
# the share). Mounts, cgroup v2, kernel modules, the tap address, Soft-RoCE on a veth pair, then
# guest-node.sh (containerd, kubelet, kube-proxy); then idles until the host quits qemu.
# Settings come from /mnt/host/node.env (written by up.sh).
export PATH=/opt/k8s/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
. /mnt/host/node.env
log() { echo "e2e-guest[$(cut -d' ' -f1 /proc/uptime)s] $*"; }
log "stage2 started"
mkdir -p /dev/pts /dev/shm /run /tmp
mount -t devpts devpts /dev/pts; mount -t tmpfs tmpfs /dev/shm; mount -t tmpfs tmpfs /run; mount -t tmpfs tmpfs /tmp
mount --make-rshared /
mount -t cgroup2 cgroup2 /sys/fs/cgroup || log "cgroup2 mount failed"
for c in cpuset cpu io memory hugetlb pids rdma misc; do
  echo "+$c" > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || log "cgroup controller $c not enabled"
done
# overlayfs cannot use 9p as its upper dir and etcd-style state wants a local fs: node state on tmpfs
for d in /var/lib/containerd /var/lib/kubelet /var/lib/cni /var/log /run/containerd; do
  mkdir -p $d; mount -t tmpfs -o mode=0755 tmpfs $d
done
mkdir -p /opt/k8s/bin
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=loose,ro k8sbin /opt/k8s/bin || log "k8sbin mount failed"
for m in virtio_net overlay br_netfilter bridge veth nf_conntrack nf_nat nf_tables nft_compat nft_chain_nat \
         ip_tables iptable_nat iptable_filter iptable_mangle ip6_tables ip6table_nat ip6table_filter ip6table_mangle \
         xt_MASQUERADE xt_conntrack xt_comment xt_mark xt_addrtype xt_multiport xt_statistic xt_nat xt_tcpudp \
         ipt_REJECT xt_physdev nf_reject_ipv4 crc32_generic rdma_rxe ib_uverbs rdma_ucm ib_umad; do
  modprobe $m 2>/dev/null || log "modprobe $m failed"
done
sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1
# pods inherit these from containerd: RDMA memory registration needs an unlimited RLIMIT_MEMLOCK
ulimit -l unlimited; ulimit -n 1048576
hostname "$E2E_NODE"; echo "$E2E_NODE" > /etc/hostname
ip link set lo up
# Hash one connection through conntrack now, while the guest is idle: conntrack seeds its hash
# on first use (get_random_once), which then patches a static key in the kernel's text; under
# TCG that patching, racing the softirqs of the first busy traffic (kubelet, kube-proxy), has
# soft-locked both vCPUs in hash_conntrack_raw (serial log: kprobe int3 handler, ksoftirqd).
if iptables -t raw -I OUTPUT -o lo -m conntrack --ctstate NEW -j ACCEPT 2>/dev/null; then
  echo warm >/dev/udp/127.0.0.1/9 2>/dev/null || true
  sleep 1 # the static key's patching runs in a worker, after the first hash
  iptables -t raw -D OUTPUT -o lo -m conntrack --ctstate NEW -j ACCEPT 2>/dev/null || true
else
  log "conntrack warm-up rule refused"
fi
ip link set eth0 up; ip addr add "$E2E_GUEST_IP/30" dev eth0; ip route add default via "$E2E_HOST_IP"
# Soft-RoCE: rxe0 on veth0 (198.18.0.1) and rxe1 on veth1 (198.18.0.2) in the init netns. Both ends
# are local, so policy routing forces traffic to the other address out of the other veth (without
# it, it would go over lo, which rxe drops).
ip link add veth0 type veth peer name veth1
for v in veth0 veth1; do ip link set $v mtu 9000; ip link set $v up; done
ip addr add 198.18.0.1/24 dev veth0; ip addr add 198.18.0.2/24 dev veth1
ip rule add pref 10 iif lo to 198.18.0.2 lookup 100; ip route add 198.18.0.2 dev veth0 src 198.18.0.1 table 100
ip rule add pref 10 iif lo to 198.18.0.1 lookup 101; ip route add 198.18.0.1 dev veth1 src 198.18.0.2 table 101
ip rule add pref 20 lookup local; ip rule del pref 0 lookup local
for i in all default veth0 veth1; do
  echo 0 > /proc/sys/net/ipv4/conf/$i/rp_filter; echo 1 > /proc/sys/net/ipv4/conf/$i/accept_local
done
rdma link add rxe0 type rxe netdev veth0 || log "rxe0 failed"
rdma link add rxe1 type rxe netdev veth1 || log "rxe1 failed"
log "rdma: $(rdma link show | tr '\n' ';') /dev/infiniband: $(ls /dev/infiniband | tr '\n' ' ')"
# debug shell on the second serial port (host: socat - UNIX-CONNECT:$E2E_WORK/guest-shell.sock)
( while :; do setsid bash -c 'exec bash -i </dev/ttyS1 >/dev/ttyS1 2>&1'; sleep 1; done ) &
log "stage2 ready"
(cd /mnt/host && bash /mnt/host/guest-node.sh)
log "guest-node.sh exited rc=$?"
while :; do sleep 3600; done
