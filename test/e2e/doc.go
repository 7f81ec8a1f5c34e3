// Package e2e is ringcap's end-to-end suite: it installs the Helm chart into a real cluster whose
// node has RDMA devices (Soft-RoCE in CI) and drives the whole path with client-go — the device
// plugin registering with a real kubelet, a RingCapture receiving real RoCE traffic into a
// PSRDADA ring, invalid objects rejected by the API server, kubelet and operator restarts, and
// clean deletion.
//
// The tests carry the build tag e2e and run against any kubeconfig:
//
//	make e2e        # test/e2e/harness: real single-node cluster, node inside the Soft-RoCE VM
//	make e2e-kind   # a kind cluster with Soft-RoCE on the host (needs Docker)
//
// Environment: KUBECONFIG, RINGCAP_E2E_IMAGE_TAG (tag of the ringcap/* images on the node),
// RINGCAP_E2E_NODE (the RDMA node; default: the only node), RINGCAP_E2E_DEVICES (RDMA devices
// the node must offer, default "rxe0,rxe1"), RINGCAP_E2E_PULL_POLICY (default Never),
// RINGCAP_E2E_NAMESPACE (default ringcap-system), HELM (default: helm in PATH),
// RINGCAP_E2E_HELM_SET (comma-separated key=value pairs passed to step 1's helm install as
// --set, e.g. operator.leaderElection=false on a control plane under emulation),
// RINGCAP_E2E_SEND_SECONDS (how long step 3's sender streams, default 30; longer where the
// control plane answers slowly, so that the status is seen while data flows).
// See test/e2e/README.md for the harness and its layout.
package e2e
