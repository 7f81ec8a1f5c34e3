# kind on ringcap's own node image, built here without a registry (issue 36). See docs/kind.md.
.PHONY: kind-node-image kind-node-check

## kind-node-image: kind node image for Kubernetes v1.34.10 from local builds (podman, no registry)
kind-node-image:
	hack/kind/build-node-image.sh

## kind-node-check: the node image on this host: podman-provider kind cluster, node Ready, kube-system up, deleted
kind-node-check:
	hack/kind/host-check.sh

.PHONY: e2e-kind-vm
## e2e-kind-vm: the e2e suite on kind (podman, local node image) in the Soft-RoCE VM; not in test-all
e2e-kind-vm:
	test/e2e/harness/kind-vm.sh
