// Command portwatch is `make bench-dra`'s probe inside the e2e VM: it takes an RDMA port's
// netdev down and up again, RUNS times, and times how long each change takes to show in the
// DRA driver's ResourceSlice (an informer on the API server) and in the device plugin's
// ListAndWatch stream (a second client on the plugin's socket, as the kubelet is one). Both
// are timed from just before the link command, on the guest's clock, in one process. It
// prints one line per run and brings the link up again on every way out.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

type options struct {
	kubeconfig, node, driver, netdev string
	socket, deviceID                 string
	downCmd, upCmd                   string
	runs                             int
	limit                            time.Duration
}

// obs is one watcher's view changing: the port is usable (in the slice, Healthy) or not.
type obs struct {
	src string
	up  bool
	at  time.Time
}

const (
	srcSlice = "slice"
	srcLAW   = "listandwatch"
)

func main() {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig for the API server")
	flag.StringVar(&o.node, "node", "", "node name (the slice's spec.nodeName)")
	flag.StringVar(&o.driver, "driver", "rdma.ringcap.io", "DRA driver name")
	flag.StringVar(&o.netdev, "netdev", "veth1", "netdev attribute (ringcap.io/netdev) of the slice device")
	flag.StringVar(&o.socket, "plugin-socket", "/var/lib/kubelet/device-plugins/ringcap-rdma.sock", "device plugin socket")
	flag.StringVar(&o.deviceID, "device-id", "rxe1", "device ID in ListAndWatch")
	flag.StringVar(&o.downCmd, "down", "ip link set veth1 down", "shell command that takes the port down")
	flag.StringVar(&o.upCmd, "up", "ip link set veth1 up", "shell command that brings the port up again")
	flag.IntVar(&o.runs, "runs", 20, "down/up cycles")
	flag.DurationVar(&o.limit, "limit", time.Minute, "longest wait for one change (liveness)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "portwatch:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := make(chan obs, 64)
	errs := make(chan error, 2)
	go func() { errs <- watchSlices(ctx, cs, o, ch) }()
	go func() { errs <- watchPlugin(ctx, o, ch) }()
	defer func() {
		if err := shell(o.upCmd); err != nil {
			fmt.Fprintln(os.Stderr, "portwatch: restore the link:", err)
		}
	}()
	w := &waiter{ch: ch, errs: errs, cur: map[string]bool{}, limit: o.limit}
	if _, err := w.until(true, time.Now()); err != nil {
		return fmt.Errorf("before the first run: %w", err)
	}
	for i := 1; i <= o.runs; i++ {
		down, err := w.flip(o.downCmd, false)
		if err != nil {
			return fmt.Errorf("run %d, down: %w", i, err)
		}
		up, err := w.flip(o.upCmd, true)
		if err != nil {
			return fmt.Errorf("run %d, up: %w", i, err)
		}
		fmt.Printf("portwatch run=%d down slice_ms=%.1f listandwatch_ms=%.1f up slice_ms=%.1f listandwatch_ms=%.1f\n",
			i, ms(down[srcSlice]), ms(down[srcLAW]), ms(up[srcSlice]), ms(up[srcLAW]))
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func shell(cmd string) error {
	out, err := exec.Command("sh", "-c", cmd).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", cmd, err, out)
	}
	return nil
}

// waiter follows both watchers' current views.
type waiter struct {
	ch    chan obs
	errs  chan error
	cur   map[string]bool
	limit time.Duration
}

// flip runs cmd and returns how long after its start each watcher showed the port as want.
func (w *waiter) flip(cmd string, want bool) (map[string]time.Duration, error) {
	start := time.Now()
	if err := shell(cmd); err != nil {
		return nil, err
	}
	return w.until(want, start)
}

// until waits until both watchers' views are want and returns, for each, the time from
// start to its last change (0 when it was want already).
func (w *waiter) until(want bool, start time.Time) (map[string]time.Duration, error) {
	took := map[string]time.Duration{}
	timeout := time.After(w.limit)
	for {
		if v, ok := w.cur[srcSlice]; ok && v == want {
			if v, ok := w.cur[srcLAW]; ok && v == want {
				return took, nil
			}
		}
		select {
		case o := <-w.ch:
			w.cur[o.src] = o.up
			took[o.src] = max(o.at.Sub(start), 0)
		case err := <-w.errs:
			return nil, err
		case <-timeout:
			return nil, fmt.Errorf("not seen within %v (slice %v, ListAndWatch %v; want %v)", w.limit, w.cur[srcSlice], w.cur[srcLAW], want)
		}
	}
}

// watchSlices sends whether the driver's slices for the node list a device with the netdev,
// at the start and whenever that changes. An informer follows the slices: one list, then a
// watch that the reflector resumes from the last resourceVersion it saw whenever the API
// server ends it; each new watch and each watch error is logged on stderr.
func watchSlices(ctx context.Context, cs kubernetes.Interface, o options, ch chan<- obs) error {
	slices := cs.ResourceV1().ResourceSlices()
	sel := fields.AndSelectors(
		fields.OneTermEqualSelector(resourcev1.ResourceSliceSelectorNodeName, o.node),
		fields.OneTermEqualSelector(resourcev1.ResourceSliceSelectorDriver, o.driver)).String()
	watches := 0
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			lo.FieldSelector = sel
			return slices.List(ctx, lo)
		},
		WatchFuncWithContext: func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
			if watches++; watches > 1 {
				fmt.Fprintf(os.Stderr, "portwatch: slice watch %d from resourceVersion %q\n", watches, lo.ResourceVersion)
			}
			lo.FieldSelector = sel
			return slices.Watch(ctx, lo)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &resourcev1.ResourceSlice{}, 0, cache.Indexers{})
	if err := inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		fmt.Fprintln(os.Stderr, "portwatch: slice watch ended with an error:", err)
	}); err != nil {
		return err
	}
	last, known := false, false
	report := func(any) {
		now := storeHasNetdev(inf.GetStore(), o.netdev)
		if !known || now != last {
			known, last = true, now
			select {
			case ch <- obs{src: srcSlice, up: now, at: time.Now()}:
			case <-ctx.Done():
			}
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    report,
		UpdateFunc: func(_, obj any) { report(obj) },
		DeleteFunc: report,
	}); err != nil {
		return err
	}
	inf.RunWithContext(ctx)
	return nil
}

// storeHasNetdev says whether any slice in the store has a device with the netdev.
func storeHasNetdev(st cache.Store, netdev string) bool {
	for _, obj := range st.List() {
		if sl, ok := obj.(*resourcev1.ResourceSlice); ok && hasNetdev(sl, netdev) {
			return true
		}
	}
	return false
}

func hasNetdev(sl *resourcev1.ResourceSlice, netdev string) bool {
	for _, d := range sl.Spec.Devices {
		if v := d.Attributes["ringcap.io/netdev"].StringValue; v != nil && *v == netdev {
			return true
		}
	}
	return false
}

// watchPlugin sends whether the device plugin lists the device as Healthy, at the start and
// whenever that changes.
func watchPlugin(ctx context.Context, o options, ch chan<- obs) error {
	conn, err := grpc.NewClient("unix://"+o.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("dial %s: %w", o.socket, err)
	}
	defer func() { _ = conn.Close() }()
	stream, err := pluginapi.NewDevicePluginClient(conn).ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		return fmt.Errorf("ListAndWatch on %s: %w", o.socket, err)
	}
	last, known := false, false
	for {
		resp, err := stream.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("ListAndWatch: %w", err)
		}
		now := false
		for _, d := range resp.Devices {
			now = now || (d.ID == o.deviceID && d.Health == pluginapi.Healthy)
		}
		if !known || now != last {
			known, last = true, now
			ch <- obs{src: srcLAW, up: now, at: time.Now()}
		}
	}
}
