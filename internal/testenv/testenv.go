// Package testenv starts a real kube-apiserver and etcd (envtest, with the
// binaries hack/build-testbin.sh builds) with this project's CRDs installed,
// for tests that need admission or controllers but no running pods.
package testenv

import (
	"fmt"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/testbin"
)

// Env is a running control plane.
type Env struct {
	Env    *envtest.Environment
	Config *rest.Config
	Client client.Client
	Scheme *runtime.Scheme
}

// Scheme returns a scheme with the core kinds and this project's kinds.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding core kinds: %w", err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding CRD kinds: %w", err)
	}
	if err := valkeyv1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding valkey kinds: %w", err)
	}
	return s, nil
}

// CRDDir is the directory of the generated CRDs.
func CRDDir() (string, error) {
	root, err := testbin.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "config", "crd", "bases"), nil
}

// Start runs etcd and kube-apiserver and installs the CRDs.
func Start() (*Env, error) {
	dir, err := testbin.Dir(testbin.APIServerBinaries...)
	if err != nil {
		return nil, err
	}
	crds, err := CRDDir()
	if err != nil {
		return nil, err
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: dir,
		CRDDirectoryPaths:     []string{crds},
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting test control plane: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("building client: %w", err)
	}
	return &Env{Env: env, Config: cfg, Client: c, Scheme: scheme}, nil
}

// Stop stops the control plane.
func (e *Env) Stop() error {
	return e.Env.Stop()
}
