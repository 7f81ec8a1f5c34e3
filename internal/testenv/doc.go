// Package testenv starts a real kube-apiserver and etcd (controller-runtime's envtest)
// with ringcap's CRDs installed, for the tests with the build tag envtest; it can also
// run controllers of kube-controller-manager (the garbage collector, the ClusterRole
// aggregation), render the Helm chart, and create a user with exactly the operator's
// RBAC. The binaries come from KUBEBUILDER_ASSETS, filled by `make envtest-assets`
// (hack/k8s).
package testenv
