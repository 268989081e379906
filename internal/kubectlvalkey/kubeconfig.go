package kubectlvalkey

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// connection is an API client and the namespace to work in.
type connection struct {
	client    client.Client
	namespace string
}

// connect loads the kubeconfig as kubectl does: --kubeconfig, else the
// files in $KUBECONFIG, else ~/.kube/config; the namespace is -n, else the
// context's, else "default".
func connect(flags commonFlags) (connection, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = flags.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: flags.context}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := loader.ClientConfig()
	if err != nil {
		return connection{}, fmt.Errorf("loading kubeconfig: %w", err)
	}
	ns := flags.namespace
	if ns == "" {
		if ns, _, err = loader.Namespace(); err != nil {
			return connection{}, fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
		}
	}
	scheme, err := newScheme()
	if err != nil {
		return connection{}, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return connection{}, fmt.Errorf("creating the API client for %s: %w", cfg.Host, err)
	}
	return connection{client: c, namespace: ns}, nil
}

// newScheme knows only what the plugin reads.
func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, valkeyv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building the API scheme: %w", err)
		}
	}
	return s, nil
}
