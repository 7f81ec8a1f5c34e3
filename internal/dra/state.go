package dra

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// The prepared claims live on disk, one CDI spec each (cdi.go): every kubelet call
// loads them at its start, so two instances of a rolling update share them (the
// kubeletplugin helper serialises their calls with a lock file). CheckState runs at
// start and every stateCheckInterval: it reports spec files that cannot be read and
// frees the claims the API no longer has (the kubelet never unprepares a claim it
// forgot, e.g. after its own state was lost).

// stateCheckInterval is how often Run checks the prepared claims against the API.
const stateCheckInterval = time.Minute

// lockFile is the kubeletplugin helper's lock file in the plugin directory (with
// RollingUpdate, it serialises the kubelet's calls across instances).
const lockFile = "serialize.lock"

// Event reasons on the Node.
const (
	ReasonBadCDISpec   = "RingcapBadCDISpec"
	ReasonClaimFreed   = "RingcapClaimFreed"
	eventComponent     = DriverName
	eventWriteDeadline = 10 * time.Second
)

// lockState takes the lock the helper takes for the kubelet's calls when two
// instances may run (Options.PodUID set), then d.mu; unlock releases both.
func (d *Driver) lockState() (unlock func(), err error) {
	var f *fileutil.LockedFile
	if d.opts.PodUID != "" {
		if f, err = fileutil.LockFile(filepath.Join(d.pluginDir(), lockFile), os.O_RDWR|os.O_CREATE, 0o666); err != nil {
			return nil, fmt.Errorf("lock the prepared claims: %w", err)
		}
	}
	d.mu.Lock()
	return func() {
		d.mu.Unlock()
		if f != nil {
			_ = f.Close()
		}
	}, nil
}

// CheckState reloads the prepared claims, reports spec files that cannot be read
// (logged, and an Event on the Node, once each), and removes the specs of claims the
// API no longer has (NotFound, or a claim of that name with another UID), freeing
// their devices. A claim is never freed on any other API error.
func (d *Driver) CheckState(ctx context.Context) error {
	claims, err := d.checkSpecs(ctx)
	if err != nil || d.opts.Client == nil {
		return err
	}
	gone, present := d.goneClaims(ctx, claims)
	var err2 error
	if len(gone) > 0 {
		err2 = d.free(ctx, gone)
	}
	d.syncLinks(ctx, present)
	return err2
}

// checkSpecs loads the prepared claims under the lock, reports the newly unreadable
// spec files and returns the claims.
func (d *Driver) checkSpecs(ctx context.Context) ([]preparedClaim, error) {
	unlock, err := d.lockState()
	if err != nil {
		return nil, err
	}
	bad, err := d.loadPreparedLocked()
	var fresh []badSpec
	now := map[string]bool{}
	for _, b := range bad {
		now[b.Path] = true
		if !d.badSpecs[b.Path] {
			fresh = append(fresh, b)
		}
	}
	d.badSpecs = now
	claims := make([]preparedClaim, 0, len(d.prepared))
	for _, pc := range d.prepared {
		claims = append(claims, pc)
	}
	unlock()
	if err != nil {
		return nil, err
	}
	for _, b := range fresh {
		d.log.Error(b.Err, "CDI spec file skipped: cannot be read as a claim spec; left in place (remove it once you know whose it is)", "path", b.Path)
		d.nodeEvent(ctx, ReasonBadCDISpec, fmt.Sprintf("CDI spec %s skipped and left in place: %v", filepath.Base(b.Path), b.Err))
	}
	return claims, nil
}

// goneClaims asks the API for each claim; it returns those it no longer has, and those
// it has.
func (d *Driver) goneClaims(ctx context.Context, claims []preparedClaim) (gone []preparedClaim, present []*resourceapi.ResourceClaim) {
	for _, pc := range claims {
		c, err := d.opts.Client.ResourceV1().ResourceClaims(pc.Namespace).Get(ctx, pc.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			gone = append(gone, pc)
		case err != nil:
			d.log.Error(err, "Cannot check a prepared claim; kept", "claim", pc.Namespace+"/"+pc.Name, "uid", pc.UID)
		case c.UID != pc.UID:
			gone = append(gone, pc)
		default:
			present = append(present, c)
		}
	}
	return gone, present
}

// free removes the specs of claims the API no longer has.
func (d *Driver) free(ctx context.Context, gone []preparedClaim) error {
	unlock, err := d.lockState()
	if err != nil {
		return err
	}
	var freed []preparedClaim
	var firstErr error
	for _, pc := range gone {
		if err := removeSpec(d.opts.CDIDir, pc.UID); err != nil {
			d.log.Error(err, "Cannot free a claim the API no longer has", "claim", pc.Namespace+"/"+pc.Name, "uid", pc.UID)
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		delete(d.prepared, pc.UID)
		d.untrackLinks(pc.UID)
		freed = append(freed, pc)
	}
	d.updateHealthLocked()
	unlock()
	for _, pc := range freed {
		var devs []string
		for _, a := range pc.Devices {
			devs = append(devs, a.Device)
		}
		msg := fmt.Sprintf("claim %s/%s (uid %s) is gone from the API: its devices %s are free again", pc.Namespace, pc.Name, pc.UID, strings.Join(devs, ", "))
		d.log.Info("Freed a claim the API no longer has", "claim", pc.Namespace+"/"+pc.Name, "uid", pc.UID, "devices", devs)
		d.nodeEvent(ctx, ReasonClaimFreed, msg)
	}
	return firstErr
}

// nodeEvent records an Event on the driver's Node (namespace default, the Node's UID
// given as its name, as the kubelet does, so `kubectl describe node` shows it). A
// failed write is logged.
func (d *Driver) nodeEvent(ctx context.Context, reason, msg string) {
	if d.opts.Client == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, eventWriteDeadline)
	defer cancel()
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: d.opts.NodeName + ".", Namespace: metav1.NamespaceDefault},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: d.opts.NodeName, UID: types.UID(d.opts.NodeName)},
		Reason:         reason, Message: msg, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: eventComponent, Host: d.opts.NodeName},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if reason == ReasonClaimFreed {
		ev.Type = corev1.EventTypeNormal
	}
	if _, err := d.opts.Client.CoreV1().Events(metav1.NamespaceDefault).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		d.log.Error(err, "Event not written", "reason", reason, "message", msg)
	}
}

// checkLoop runs CheckState every interval until ctx is done; errors are logged.
func (d *Driver) checkLoop(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := d.CheckState(ctx); err != nil {
			d.log.Error(err, "Check prepared claims")
		}
	}
}

// pluginDir is the driver's directory under the kubelet's plugins directory.
func (d *Driver) pluginDir() string {
	if d.opts.PluginDir != "" {
		return d.opts.PluginDir
	}
	return kubeletplugin.KubeletPluginsDir + "/" + DriverName
}

// stateOptions are the helper's options for the state on disk: with a pod UID, its
// rolling-update support (a registration socket per pod, calls serialised across
// instances through the lock file in the plugin directory).
func (d *Driver) stateOptions() []kubeletplugin.Option {
	if d.opts.PodUID == "" {
		return nil
	}
	return []kubeletplugin.Option{kubeletplugin.RollingUpdate(d.opts.PodUID), kubeletplugin.FlockDirectoryPath(d.pluginDir())}
}

// startStateChecks checks the prepared claims now, then every stateCheckInterval
// until stop is called (stop waits for the checker).
func (d *Driver) startStateChecks(ctx context.Context) (stop func()) {
	if err := d.CheckState(ctx); err != nil {
		d.log.Error(err, "Check prepared claims")
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.checkLoop(ctx, stateCheckInterval)
	}()
	return func() {
		cancel()
		<-done
	}
}
