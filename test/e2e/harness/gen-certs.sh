#!/usr/bin/env bash
# Self-signed PKI and kubeconfigs for the e2e cluster (openssl only), in $1 (default
# $E2E_WORK/cluster): a CA, the API server's serving cert (SANs: the host end of the tap, the
# kubernetes Service IP, 127.0.0.1), the kubelet's serving cert, client certs for admin,
# kube-controller-manager, kube-scheduler, kube-proxy, the kubelet (system:node:$E2E_NODE) and the
# API server's kubelet client, the service-account key pair and the front-proxy pair.
# Idempotent: an existing CA is kept.
set -euo pipefail
. "$(dirname "$0")/common.sh"
D=${1:-$E2E_WORK/cluster}; P=$D/pki
mkdir -p "$P"; cd "$P"
[ -f ca.crt ] && exit 0
q() { "$@" 2>/dev/null; }
q openssl genrsa -out ca.key 2048
openssl req -x509 -new -nodes -key ca.key -subj "/CN=ringcap-e2e-ca" -days 30 -out ca.crt
q openssl genrsa -out sa.key 2048; q openssl rsa -in sa.key -pubout -out sa.pub
cert() { # name CN O SAN EKU
  local n=$1 cn=$2 o=$3 san=$4 eku=$5
  q openssl genrsa -out "$n.key" 2048
  openssl req -new -key "$n.key" -subj "/CN=$cn${o:+/O=$o}" -out "$n.csr"
  { echo "basicConstraints=CA:FALSE"; echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$eku"; [ -z "$san" ] || echo "subjectAltName=$san"; } > "$n.ext"
  q openssl x509 -req -in "$n.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -extfile "$n.ext" -out "$n.crt"
  rm -f "$n.csr" "$n.ext"
}
svc_ip=${SERVICE_CIDR%.*}.1
cert apiserver kube-apiserver "" "IP:$E2E_HOST_IP,IP:$svc_ip,IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" serverAuth
cert kubelet-serving "$E2E_NODE" "" "IP:$E2E_GUEST_IP,DNS:$E2E_NODE" serverAuth
cert admin kubernetes-admin system:masters "" clientAuth
cert controller-manager system:kube-controller-manager "" "" clientAuth
cert scheduler system:kube-scheduler "" "" clientAuth
cert kube-proxy system:kube-proxy "" "" clientAuth
cert kubelet "system:node:$E2E_NODE" system:nodes "" clientAuth
cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters "" clientAuth
q openssl genrsa -out front-proxy-ca.key 2048
openssl req -x509 -new -nodes -key front-proxy-ca.key -subj "/CN=front-proxy-ca" -days 30 -out front-proxy-ca.crt
q openssl genrsa -out front-proxy-client.key 2048
openssl req -new -key front-proxy-client.key -subj "/CN=front-proxy-client" -out fp.csr
printf 'extendedKeyUsage=clientAuth\n' > fp.ext
q openssl x509 -req -in fp.csr -CA front-proxy-ca.crt -CAkey front-proxy-ca.key -CAcreateserial -days 30 -extfile fp.ext -out front-proxy-client.crt
rm -f fp.csr fp.ext
b64() { base64 -w0 < "$1"; }
for n in admin controller-manager scheduler kube-proxy kubelet; do
  cat > "$D/$n.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster: {server: "https://$E2E_HOST_IP:6443", certificate-authority-data: $(b64 ca.crt)}
users:
- name: $n
  user: {client-certificate-data: $(b64 "$n.crt"), client-key-data: $(b64 "$n.key")}
contexts:
- name: e2e
  context: {cluster: e2e, user: $n}
current-context: e2e
KC
done
