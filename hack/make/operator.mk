# RingCapture API and operator (issue 6): code generation, the envtest tier and the
# operator benchmark.

CONTROLLER_GEN ?= controller-gen
# Kubernetes binaries for envtest (kube-apiserver, plus kube-controller-manager for its
# garbage collector), built from the Go module proxy by hack/k8s/build-k8s.sh.
K8S_VERSION ?= v1.34.10
ENVTEST_ASSETS ?= /var/tmp/ringcap/k8s/envtest-$(K8S_VERSION)

GENERATE += generate-api
TEST_ALL += test-envtest
BENCH += bench-operator

.PHONY: generate-api envtest-assets test-envtest bench-operator

## generate-api: deepcopy code, CRD YAML (config/crd/bases, descriptions one line per paragraph) and RBAC (config/rbac) from api/v1alpha1 markers
generate-api:
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(GO) run ./hack/crddesc config/crd/bases/*.yaml
	$(CONTROLLER_GEN) rbac:roleName=ringcap-operator paths=./internal/controller/... output:rbac:artifacts:config=config/rbac

## envtest-assets: kube-apiserver + kube-controller-manager + etcd for the envtest tier
envtest-assets:
	K8S_VERSION=$(K8S_VERSION) ASSETS_DIR=$(ENVTEST_ASSETS) hack/k8s/envtest-assets.sh

## test-envtest: API validation, operator and kubectl plugin tests against a real kube-apiserver and etcd
test-envtest: envtest-assets
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(GO) test -count=1 -tags envtest -timeout 15m ./api/... ./internal/controller/... ./cmd/kubectl-ringcap/

## bench-operator: time for 200 RingCaptures to reach a steady status, and reconciles per second
bench-operator: envtest-assets
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(GO) test -count=1 -tags envtest -run '^$$' -bench BenchmarkOperator -benchtime 1x -timeout 15m ./internal/controller/
