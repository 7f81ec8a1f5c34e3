package main

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// clusterFlags are kubectl's connection flags the plugin honours.
type clusterFlags struct {
	kubeconfig    string
	context       string
	namespace     string
	allNamespaces bool
}

func (f *clusterFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&f.context, "context", "", "the kubeconfig context to use (default: its current context)")
	fs.StringVarP(&f.namespace, "namespace", "n", "", "the namespace (default: the context's namespace, else default)")
	fs.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "captures of every namespace")
}

// session is a client for ringcap's types and the namespace the flags chose.
type session struct {
	client    client.Client
	namespace string
}

// connect loads the kubeconfig as kubectl does (the flags, $KUBECONFIG, ~/.kube/config)
// and returns a client for RingCaptures.
func (f *clusterFlags) connect() (*session, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: f.context}
	overrides.Context.Namespace = f.namespace
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load the kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, fmt.Errorf("find the namespace in the kubeconfig: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		return nil, fmt.Errorf("create a client for %s: %w", cfg.Host, err)
	}
	return &session{client: c, namespace: ns}, nil
}

// newScheme holds ringcap's API types (the plugin reads nothing else).
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(ringcapv1.AddToScheme(s))
	return s
}
