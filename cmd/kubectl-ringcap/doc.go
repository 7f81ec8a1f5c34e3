// Command kubectl-ringcap is the kubectl plugin `kubectl ringcap`: `top` shows every
// RingCapture of a namespace (or of all) with its rate, ring fill and slowest reader,
// redrawn like top; `describe NAME` shows one capture's conditions, endpoint, ring and
// reader slots, observation and last run. Copied onto PATH, kubectl finds it as
// `kubectl ringcap`. It reads the cluster from the usual kubeconfig (--kubeconfig,
// $KUBECONFIG, ~/.kube/config) and --context, --namespace/-n, --all-namespaces/-A.
package main
