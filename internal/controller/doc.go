// Package controller is ringcap's operator: it reconciles each RingCapture into one
// capture pod (receiver + reader containers sharing the pod's IPC namespace) and keeps
// the RingCapture's status in step with the pod and with the receiver's /status.
//
// Reconcile is a short skeleton; the pod spec and the status are computed by pure
// functions (BuildPod, ReceiverArgs, ComputeStatus) that are table-tested without an
// API server. The envtest tests (build tag envtest) run the controller against a real
// kube-apiserver and etcd.
package controller

// RBAC of the operator (controller-gen writes config/rbac/role.yaml from these):
// it reads and updates RingCaptures and their status, creates and deletes the capture
// pods it owns, and records events. Nothing else: the receiver's progress is read over
// HTTP from the pod, which needs no API permission (see statusPollInterval).
//
// +kubebuilder:rbac:groups=ringcap.io,resources=ringcaptures,verbs=get;list;watch
// +kubebuilder:rbac:groups=ringcap.io,resources=ringcaptures/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=ringcap.io,resources=ringcaptures/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaimtemplates,verbs=get;create;delete
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims,verbs=get
