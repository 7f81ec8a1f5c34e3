# kind on ringcap's own node image, built here without a registry (issue 36). See docs/kind.md.
.PHONY: kind-node-image kind-node-check

## kind-node-image: kind node image for Kubernetes v1.34.10 from local builds (podman, no registry)
kind-node-image:
	hack/kind/build-node-image.sh

## kind-node-check: the node image on this host: podman-provider kind cluster, node Ready, kube-system up, deleted
kind-node-check:
	hack/kind/host-check.sh
