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

// options are the operator's flags.
type options struct {
	metricsAddr, probeAddr, leNamespace, namespace string
	receiverImage, pullPolicy, receiverMemory      string
	leaderElect, showVersion                       bool
	workers, apiBurst                              int
	apiQPS                                         float64
	zap                                            zap.Options
}

func parseFlags() *options {
	o := &options{}
	flag.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus /metrics endpoint (0 disables it)")
	flag.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	flag.BoolVar(&o.leaderElect, "leader-elect", false, "elect a leader so that only one replica reconciles")
	flag.StringVar(&o.leNamespace, "leader-election-namespace", "", "namespace of the leader election Lease (default: the pod's namespace)")
	flag.StringVar(&o.namespace, "namespace", "", "watch RingCaptures in these namespaces only, separated by commas (default: all)")
	flag.StringVar(&o.receiverImage, "receiver-image", "ringcap/ringcap:"+version, "default image of the receiver and the readers (entrypoint ringcap)")
	flag.StringVar(&o.pullPolicy, "image-pull-policy", "", "default pull policy of capture pods: Always, IfNotPresent or Never (default: the cluster's)")
	flag.StringVar(&o.receiverMemory, "receiver-memory", "256Mi", "memory of the receiver process, added to the ring's bytes when a RingCapture sets none")
	flag.IntVar(&o.workers, "max-concurrent-reconciles", 8, "RingCaptures reconciled in parallel")
	flag.Float64Var(&o.apiQPS, "kube-api-qps", 50, "steady rate of API requests per second")
	flag.IntVar(&o.apiBurst, "kube-api-burst", 100, "burst of API requests")
	flag.BoolVar(&o.showVersion, "version", false, "print the version and exit")
	o.zap.BindFlags(flag.CommandLine)
	flag.Parse()
	return o
}

func run() error {
	o := parseFlags()
	if o.showVersion {
		fmt.Println(version)
		return nil
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))
	pods, err := o.podOptions()
	if err != nil {
		return err
	}
	namespaces, err := controller.ParseNamespaces(o.namespace)
	if err != nil {
		return fmt.Errorf("--namespace %q: %w", o.namespace, err)
	}
	if o.workers < 1 {
		return fmt.Errorf("--max-concurrent-reconciles %d: want at least 1", o.workers)
	}
	mgr, err := o.manager(namespaces)
	if err != nil {
		return err
	}
	if err := setup(mgr, pods, o.workers); err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("Starting operator", "version", version, "receiverImage", o.receiverImage, "namespaces", namespaces)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}

// podOptions are the capture pods' defaults from the flags.
func (o *options) podOptions() (controller.PodOptions, error) {
	pods := controller.DefaultPodOptions()
	pods.ReceiverImage = o.receiverImage
	switch p := corev1.PullPolicy(o.pullPolicy); p {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		pods.ImagePullPolicy = p
	default:
		return pods, fmt.Errorf("--image-pull-policy %q: want Always, IfNotPresent or Never", o.pullPolicy)
	}
	mem, err := resource.ParseQuantity(o.receiverMemory)
	if err != nil || mem.Sign() <= 0 {
		return pods, fmt.Errorf("--receiver-memory %q: want a positive quantity such as 256Mi", o.receiverMemory)
	}
	pods.ReceiverMemory = mem
	return pods, nil
}

// manager is the controller-runtime manager the flags describe, watching namespaces.
func (o *options) manager(namespaces []string) (ctrl.Manager, error) {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(ringcapv1.AddToScheme(scheme))
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(o.apiQPS), o.apiBurst
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress:        o.probeAddr,
		LeaderElection:                o.leaderElect,
		LeaderElectionID:              "ringcap-operator.ringcap.io",
		LeaderElectionNamespace:       o.leNamespace,
		LeaderElectionReleaseOnCancel: true,
		Cache:                         controller.CacheOptions(namespaces),
	})
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	return mgr, nil
}

// setup adds the RingCapture controller and the health checks to mgr.
func setup(mgr ctrl.Manager, pods controller.PodOptions, workers int) error {
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
	return nil
}
