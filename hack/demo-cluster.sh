#!/usr/bin/env bash
# The main job: a real capture on a real cluster with Soft-RoCE.
#   1. bring up a single-node Kubernetes v1.34.10 whose node runs inside the Soft-RoCE VM
#      (test/e2e/harness/up.sh: Kubernetes from the Go module proxy, images built from this tree),
#   2. helm install ringcap (device plugin + operator),
#   3. kubectl apply the chart's sample RingCapture (an 8 MiB PSRDADA ring, 4 QPs, a reader
#      container that verifies every byte),
#   4. stream a seeded pattern into it over RoCE from a sender pod on the other rxe device,
#   5. show `kubectl get rcap` (bytes, rate, MR mode) while it runs and at the end, and the
#      reader's verdict,
# then tear everything down (by recorded PIDs, on failure too). KEEP=1 leaves the cluster up.
#
#   hack/demo-cluster.sh                      # 256 MiB at up to 0.2 Gb/s
#   DEMO_BYTES=64M DEMO_RATE_GBPS=0.1 hack/demo-cluster.sh
set -uo pipefail
cd "$(dirname "$0")/.."
HARNESS=test/e2e/harness
. "$HARNESS/common.sh"

BYTES=${DEMO_BYTES:-256M}
RATE=${DEMO_RATE_GBPS:-0.2}
NS=${DEMO_NAMESPACE:-ringcap-system}
rc=1
finish() {
  if [ "$rc" != 0 ] && [ -n "${KUBECONFIG:-}" ]; then
    kubectl get rcap,pods -A -o wide 2>/dev/null
    kubectl describe rcap sample 2>/dev/null | tail -n 20
  fi
  if [ -z "${KEEP:-}" ]; then "$HARNESS/down.sh"; else log "KEEP=1: cluster left running (. $E2E_WORK/e2e.env; make e2e-down stops it)"; fi
  log "demo $([ "$rc" = 0 ] && echo PASSED || echo FAILED)"
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

"$HARNESS/up.sh" || exit 1
. "$E2E_WORK/e2e.env"
TAG=$RINGCAP_E2E_IMAGE_TAG

log "helm install ringcap (plugin + operator)"
helm upgrade --install ringcap charts/ringcap --namespace "$NS" --create-namespace \
  --set image.tag="$TAG" --set image.pullPolicy=Never --wait --timeout 5m || exit 1
wait_for "node advertises ringcap.io/rdma" 180 \
  sh -c "kubectl get node $E2E_NODE -o jsonpath='{.status.allocatable.ringcap\.io/rdma}' | grep -qx '[1-9][0-9]*'" || exit 1
kubectl get rdmanode "$E2E_NODE" -o jsonpath='{range .status.devices[*]}{"RDMANode: "}{.name}{" health="}{.health}{range .ports[*]}{" port="}{.number}{" "}{.state}{" chosenGIDIndex="}{.chosenGIDIndex}{end}{"\n"}{end}'

log "kubectl apply the sample RingCapture"
kubectl apply -f charts/ringcap/examples/ringcapture.yaml || exit 1
wait_for "capture ready for senders (ReceiverReady)" 240 \
  sh -c "kubectl get rcap sample -o jsonpath='{.status.conditions[?(@.type==\"ReceiverReady\")].status}' | grep -qx True" || exit 1
ADDR=$(kubectl get rcap sample -o jsonpath='{.status.endpoint.address}')
PORT=$(kubectl get rcap sample -o jsonpath='{.status.endpoint.port}')
kubectl get rcap sample

log "streaming $BYTES over RoCE to $ADDR:$PORT"
kubectl apply -f - <<EOF || exit 1
apiVersion: v1
kind: Pod
metadata: {name: demo-sender, namespace: default}
spec:
  nodeName: $E2E_NODE
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: ringcap/ringcap:$TAG
    imagePullPolicy: Never
    args: [send, --connect, "$ADDR:$PORT", --qps, "4", --mode, send, --msg-bytes, "65536", --bytes, "$BYTES", --rate-gbps, "$RATE", --seed, "1"]
    resources: {limits: {ringcap.io/rdma: "1"}}
    securityContext:
      runAsNonRoot: true
      runAsUser: 65532
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
EOF
end=$((EPOCHSECONDS + 600))
while :; do
  phase=$(kubectl get rcap sample -o jsonpath='{.status.phase}' 2>/dev/null)
  kubectl get rcap sample --no-headers 2>/dev/null
  case $phase in Succeeded|Failed) break ;; esac
  if [ "$(kubectl get pod demo-sender -o jsonpath='{.status.phase}' 2>/dev/null)" = Failed ]; then
    log "the sender failed: $(kubectl logs demo-sender 2>&1 | tail -n 3)"; exit 1
  fi
  [ "$EPOCHSECONDS" -lt "$end" ] || { log "timeout waiting for the capture to finish"; exit 1; }
  sleep 5
done
echo
kubectl get rcap sample
echo
echo "sender: $(kubectl logs demo-sender 2>/dev/null | tail -n 1)"
pod=$(kubectl get rcap sample -o jsonpath='{.status.pod}')
echo "reader: $(kubectl logs "$pod" -c verify 2>/dev/null | tail -n 1)"
kubectl delete pod demo-sender --wait=false >/dev/null 2>&1
[ "$phase" = Succeeded ] || exit 1
kubectl logs "$pod" -c verify 2>/dev/null | tail -n 1 | grep -q 'mismatches=0' || { log "the reader did not verify every byte"; exit 1; }
rc=0
