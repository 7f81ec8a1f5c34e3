package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// Env is a running control plane.
type Env struct {
	env *envtest.Environment
	// Config is an administrator's connection.
	Config *rest.Config
	// Client is an administrator's client (with ringcap's types).
	Client client.Client
	Scheme *k8sruntime.Scheme
	gc     *exec.Cmd
	gcDir  string
}

// RepoRoot returns the repository's root directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// NewScheme returns a scheme with Kubernetes' and ringcap's types.
func NewScheme() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(ringcapv1.AddToScheme(s))
	return s
}

// Start starts etcd and kube-apiserver and installs config/crd/bases.
func Start() (*Env, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: run the envtest tier with `make test-envtest`")
	}
	e := &Env{
		env: &envtest.Environment{
			CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "config", "crd", "bases")},
			ErrorIfCRDPathMissing: true,
		},
		Scheme: NewScheme(),
	}
	cfg, err := e.env.Start()
	if err != nil {
		// Start can fail after etcd and kube-apiserver run (installing the CRDs): stop them.
		_ = e.env.Stop()
		return nil, fmt.Errorf("start envtest control plane: %w", err)
	}
	e.Config = cfg
	e.Client, err = client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		_ = e.env.Stop()
		return nil, fmt.Errorf("create client: %w", err)
	}
	return e, nil
}

// Stop stops the garbage collector (if started), kube-apiserver and etcd.
func (e *Env) Stop() error {
	var errs []error
	if e.gc != nil {
		_ = e.gc.Process.Kill()
		_ = e.gc.Wait()
		e.gc = nil
	}
	if e.gcDir != "" {
		errs = append(errs, os.RemoveAll(e.gcDir))
	}
	errs = append(errs, e.env.Stop())
	return errors.Join(errs...)
}

// OperatorConfig creates the user "ringcap-operator" with exactly the operator's RBAC:
// the ClusterRole generated into config/rbac/role.yaml, and the leader election Role
// of config/rbac/leader_election_role.yaml in leNamespace. It returns that user's
// connection, so tests run the operator with the permissions it ships with.
func (e *Env) OperatorConfig(ctx context.Context, leNamespace string) (*rest.Config, error) {
	const user = "ringcap-operator"
	var cr rbacv1.ClusterRole
	if err := readYAML(filepath.Join(RepoRoot(), "config", "rbac", "role.yaml"), &cr); err != nil {
		return nil, err
	}
	var le rbacv1.Role
	if err := readYAML(filepath.Join(RepoRoot(), "config", "rbac", "leader_election_role.yaml"), &le); err != nil {
		return nil, err
	}
	le.Namespace = leNamespace
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leNamespace}},
		&cr,
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: cr.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
			Subjects:   subject,
		},
		&le,
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: le.Name, Namespace: leNamespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: le.Name},
			Subjects:   subject,
		},
	}
	for _, o := range objs {
		if err := e.Client.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	u, err := e.env.AddUser(envtest.User{Name: user}, e.Config)
	if err != nil {
		return nil, fmt.Errorf("add user %s: %w", user, err)
	}
	return u.Config(), nil
}

// StartGarbageCollector runs kube-controller-manager with only its garbage collector
// (envtest has no controller manager), so that deleting an owner deletes its
// dependents as in a real cluster. The binary is KUBEBUILDER_ASSETS/kube-controller-manager.
func (e *Env) StartGarbageCollector(ctx context.Context) error {
	return e.StartControllerManager(ctx, "garbagecollector")
}

// StartControllerManager runs kube-controller-manager with only the named controllers,
// e.g. garbagecollector, or clusterrole-aggregation (which fills the built-in admin,
// edit and view roles from the ClusterRoles labelled to aggregate into them). One
// controller manager per Env; its log is GarbageCollectorLog.
func (e *Env) StartControllerManager(ctx context.Context, controllers ...string) error {
	if e.gc != nil {
		return errors.New("the controller manager runs already")
	}
	bin := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kube-controller-manager")
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("controller manager: %w (run `make envtest-assets`)", err)
	}
	u, err := e.env.AddUser(envtest.User{Name: "gc-admin", Groups: []string{"system:masters"}}, e.Config)
	if err != nil {
		return fmt.Errorf("add controller manager user: %w", err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		return fmt.Errorf("controller manager kubeconfig: %w", err)
	}
	e.gcDir, err = os.MkdirTemp("", "ringcap-gc-")
	if err != nil {
		return fmt.Errorf("controller manager dir: %w", err)
	}
	kcPath := filepath.Join(e.gcDir, "kubeconfig")
	if err := os.WriteFile(kcPath, kc, 0o600); err != nil {
		return fmt.Errorf("write controller manager kubeconfig: %w", err)
	}
	cmd := exec.Command(bin,
		"--kubeconfig="+kcPath,
		"--controllers="+strings.Join(controllers, ","),
		"--leader-elect=false",
		"--secure-port=0",
		"--concurrent-gc-syncs=5",
		"--v=1",
	)
	logf, err := os.Create(filepath.Join(e.gcDir, "kcm.log"))
	if err != nil {
		return fmt.Errorf("controller manager log: %w", err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("start %s: %w", bin, err)
	}
	_ = logf.Close()
	e.gc = cmd
	return nil
}

// GarbageCollectorLog returns the controller manager's log (for failure messages).
func (e *Env) GarbageCollectorLog() string {
	b, _ := os.ReadFile(filepath.Join(e.gcDir, "kcm.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func readYAML(path string, into any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	return nil
}

// StartT starts an API server for one test and stops it when the test ends, failing the
// test when either does not work.
func StartT(t testing.TB) *Env {
	t.Helper()
	env, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	return env
}
