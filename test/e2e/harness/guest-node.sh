#!/bin/bash
# Runs in the e2e VM (from guest-boot.sh): containerd with the CRI plugin, the images from
# /mnt/host/images, the kubelet (restarted when it exits, as systemd would: the suite restarts it
# by killing it) and kube-proxy, pointed at the control plane on the host end of the tap.
# Component logs go to /mnt/host/logs; milestones to the serial console.
set -u
export PATH=/opt/k8s/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
. /mnt/host/node.env
log() { echo "e2e-guest[$(cut -d' ' -f1 /proc/uptime)s] $*"; }
C=/mnt/host/cluster; P=$C/pki; L=/mnt/host/logs; mkdir -p $L /run/k8s
waitfor() {
  local what=$1; shift
  for _ in $(seq 1200); do "$@" >/dev/null 2>&1 && { log "$what ready"; return 0; }; sleep 0.5; done
  log "TIMEOUT waiting for $what"; return 1
}
ctr_() { ctr --address /run/containerd/containerd.sock "$@"; }

# containerd 2.x, config version 3: CRI split into its images and runtime plugins. CDI is always on
# in 2.x; the spec dirs are where the DRA driver writes a claim's spec (/var/run/cdi).
write_containerd2_config() {
  cat > /etc/containerd/e2e.toml <<TOML
version = 3
root = "/var/lib/containerd"
state = "/run/containerd/state"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "registry.k8s.io/pause:3.10.1"
[plugins.'io.containerd.cri.v1.runtime']
  enable_unprivileged_ports = true
  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "/etc/cni/net.d"
TOML
}
# Debian bookworm's containerd 1.6, config version 2 (no CDI)
write_containerd1_config() {
  cat > /etc/containerd/e2e.toml <<TOML
version = 2
root = "/var/lib/containerd"
state = "/run/containerd/state"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10.1"
  enable_unprivileged_ports = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
TOML
}
mkdir -p /etc/containerd /etc/cni/net.d
# containerd 2.x (built from the Go module proxy by hack/containerd/build-containerd.sh, shared by
# up.sh) unless E2E_CONTAINERD=1 chose the guest root's Debian containerd 1.6. Its PATH entry comes
# first so the kubelet's runtime, its runc shim and ctr are all the same build.
if [ "${CONTAINERD_MAJOR:-1}" = 2 ]; then
  export PATH=/mnt/host/containerd/bin:$PATH
  write_containerd2_config
else
  write_containerd1_config
fi
cat > /etc/cni/net.d/10-bridge.conflist <<JSON
{"cniVersion": "0.4.0", "name": "e2e", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
JSON
echo '{"cniVersion": "0.4.0", "name": "lo", "type": "loopback"}' > /etc/cni/net.d/99-loopback.conf
nohup containerd --config /etc/containerd/e2e.toml > $L/containerd.log 2>&1 &
waitfor containerd ctr_ version
log "containerd: $(containerd --version)"
for t in /mnt/host/images/*.tar; do
  ctr_ -n k8s.io images import "$t" >/dev/null 2>>$L/import.log || log "import $t failed"
done
log "images: $(ctr_ -n k8s.io images ls -q | grep -v '^sha256:' | tr '\n' ' ')"

cat > /run/k8s/kubelet.yaml <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $E2E_GUEST_IP
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $P/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $P/kubelet-serving.crt
tlsPrivateKeyFile: $P/kubelet-serving.key
clusterDomain: cluster.local
clusterDNS: [$DNS_SERVICE_IP]
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "2%", imagefs.available: "2%", nodefs.inodesFree: "2%"}
serializeImagePulls: false
# DRA device health in pod status (KEP-4680, alpha in 1.34; the API server has it too): step 11a
featureGates: {ResourceHealthStatus: true}
YAML
# supervised like a systemd unit with Restart=always: killing the kubelet restarts it
(
  n=0
  while :; do
    n=$((n + 1)); log "starting kubelet (start $n)"
    kubelet --config=/run/k8s/kubelet.yaml --kubeconfig=$C/kubelet.kubeconfig --node-ip="$E2E_GUEST_IP" \
      --hostname-override="$E2E_NODE" >> $L/kubelet.log 2>&1
    log "kubelet exited rc=$?"; sleep 1
  done
) &
cat > /run/k8s/kube-proxy.yaml <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $C/kube-proxy.kubeconfig}
mode: iptables
clusterCIDR: $POD_CIDR
hostnameOverride: $E2E_NODE
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack: {maxPerCore: 0, min: 0}
YAML
nohup kube-proxy --config=/run/k8s/kube-proxy.yaml > $L/kube-proxy.log 2>&1 &
# A pod that talks to a Service before kube-proxy's first sync keeps a conntrack entry without DNAT
# and hangs for minutes: the host waits for this line before installing anything.
waitfor "kube-proxy rules for the kubernetes Service" sh -c 'iptables -t nat -S KUBE-SERVICES | grep -q "${SERVICE_CIDR%.*}.1/32"'
log "node up"
