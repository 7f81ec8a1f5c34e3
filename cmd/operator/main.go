package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/internal/controller"
)

// version is set at build time (-ldflags "-X main.version=TAG"); it names the default
// receiver image.
var version = "latest"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "operator:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		metricsAddr, probeAddr, leNamespace, namespace string
		receiverImage, pullPolicy, receiverMemory      string
		leaderElect, showVersion                       bool
		workers, apiBurst                              int
		apiQPS                                         float64
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus /metrics endpoint (0 disables it)")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	flag.BoolVar(&leaderElect, "leader-elect", false, "elect a leader so that only one replica reconciles")
	flag.StringVar(&leNamespace, "leader-election-namespace", "", "namespace of the leader election Lease (default: the pod's namespace)")
	flag.StringVar(&namespace, "namespace", "", "watch RingCaptures in these namespaces only, separated by commas (default: all)")
	flag.StringVar(&receiverImage, "receiver-image", "ringcap/ringcap:"+version, "default image of the receiver and the readers (entrypoint ringcap)")
	flag.StringVar(&pullPolicy, "image-pull-policy", "", "default pull policy of capture pods: Always, IfNotPresent or Never (default: the cluster's)")
	flag.StringVar(&receiverMemory, "receiver-memory", "256Mi", "memory of the receiver process, added to the ring's bytes when a RingCapture sets none")
	flag.IntVar(&workers, "max-concurrent-reconciles", 8, "RingCaptures reconciled in parallel")
	flag.Float64Var(&apiQPS, "kube-api-qps", 50, "steady rate of API requests per second")
	flag.IntVar(&apiBurst, "kube-api-burst", 100, "burst of API requests")
	flag.BoolVar(&showVersion, "version", false, "print the version and exit")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	if showVersion {
		fmt.Println(version)
		return nil
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	pods := controller.DefaultPodOptions()
	pods.ReceiverImage = receiverImage
	switch p := corev1.PullPolicy(pullPolicy); p {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		pods.ImagePullPolicy = p
	default:
		return fmt.Errorf("--image-pull-policy %q: want Always, IfNotPresent or Never", pullPolicy)
	}
	mem, err := resource.ParseQuantity(receiverMemory)
	if err != nil || mem.Sign() <= 0 {
		return fmt.Errorf("--receiver-memory %q: want a positive quantity such as 256Mi", receiverMemory)
	}
	pods.ReceiverMemory = mem
	namespaces, err := controller.ParseNamespaces(namespace)
	if err != nil {
		return fmt.Errorf("--namespace %q: %w", namespace, err)
	}
	if workers < 1 {
		return fmt.Errorf("--max-concurrent-reconciles %d: want at least 1", workers)
	}

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(ringcapv1.AddToScheme(scheme))

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(apiQPS), apiBurst
	opts := ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:        probeAddr,
		LeaderElection:                leaderElect,
		LeaderElectionID:              "ringcap-operator.ringcap.io",
		LeaderElectionNamespace:       leNamespace,
		LeaderElectionReleaseOnCancel: true,
		Cache:                         controller.CacheOptions(namespaces),
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	r := &controller.RingCaptureReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Scheme:    mgr.GetScheme(),
		Recorder:  mgr.GetEventRecorder("ringcap-operator"),
		Pods:      pods,
		Fetcher: &controller.HTTPStatusFetcher{
			Client: &http.Client{Timeout: 5 * time.Second},
			URL:    controller.PodIPStatusURL,
		},
	}
	if err := r.SetupWithManager(mgr, ctrlcontroller.Options{MaxConcurrentReconciles: workers}); err != nil {
		return fmt.Errorf("set up RingCapture controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("add ready check: %w", err)
	}
	ctrl.Log.WithName("setup").Info("Starting operator", "version", version, "receiverImage", receiverImage, "namespaces", namespaces)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}
