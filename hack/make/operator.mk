# RingCapture API and operator (issue 6): code generation, the envtest tier and the
# operator benchmark.

CONTROLLER_GEN ?= controller-gen
# Kubernetes binaries for envtest (kube-apiserver, plus kube-controller-manager for its
# garbage collector), built from the Go module proxy by hack/k8s/build-k8s.sh.
K8S_VERSION ?= v1.34.10
ENVTEST_ASSETS ?= /var/tmp/ringcap/k8s/envtest-$(K8S_VERSION)

GENERATE += generate-api

.PHONY: generate-api

## generate-api: deepcopy code, CRD YAML (config/crd/bases) and RBAC (config/rbac) from api/v1alpha1 markers
generate-api:
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=ringcap-operator paths=./internal/controller/... output:rbac:artifacts:config=config/rbac

