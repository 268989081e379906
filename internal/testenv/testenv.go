// Package testenv starts a real kube-apiserver and etcd (envtest, with the
// binaries hack/build-testbin.sh builds) with this project's CRDs installed,
// for tests that need admission or controllers but no running pods.
package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/rbacscope"
	"github.com/gomomento/valkey-operator/internal/testbin"
)

// Env is a running control plane.
type Env struct {
	Env    *envtest.Environment
	Config *rest.Config
	Client client.Client
	Scheme *runtime.Scheme
}

// newScheme returns a scheme with the core kinds and this project's kinds.
func newScheme() (*runtime.Scheme, error) {
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

// crdDir is the directory of the generated CRDs.
func crdDir() (string, error) {
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
	crds, err := crdDir()
	if err != nil {
		return nil, err
	}
	scheme, err := newScheme()
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

// UserWithClusterRole creates a ClusterRole with rules, binds it to a new
// user of that name and returns the user's client configuration: a client
// that may do what the rules grant and nothing else.
func (e *Env) UserWithClusterRole(ctx context.Context, name string, rules []rbacv1.PolicyRule) (*rest.Config, error) {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := e.Client.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("creating %T %s: %w", o, name, err)
		}
	}
	user, err := e.Env.AddUser(envtest.User{Name: name}, rest.CopyConfig(e.Config))
	if err != nil {
		return nil, fmt.Errorf("adding user %s: %w", name, err)
	}
	return user.Config(), nil
}

// UserWithRoles creates a new user of that name holding clusterRules
// cluster-wide (a ClusterRole and its binding) and the rules of each
// namespace of nsRules in that namespace only (a Role and its binding),
// and returns the user's client configuration.
func (e *Env) UserWithRoles(ctx context.Context, name string, clusterRules []rbacv1.PolicyRule, nsRules map[string][]rbacv1.PolicyRule) (*rest.Config, error) {
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}}
	objs := []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: clusterRules},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}, Subjects: subjects},
	}
	for ns, rules := range nsRules {
		objs = append(objs,
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, Subjects: subjects})
	}
	for _, o := range objs {
		if err := e.Client.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("creating %T %s/%s: %w", o, o.GetNamespace(), name, err)
		}
	}
	user, err := e.Env.AddUser(envtest.User{Name: name}, rest.CopyConfig(e.Config))
	if err != nil {
		return nil, fmt.Errorf("adding user %s: %w", name, err)
	}
	return user.Config(), nil
}

// NamespacedInstallRules are the rules of the namespace-scoped install as
// make generate writes them into config/namespaced: cluster-wide, in each
// watched namespace, and in the operator's namespace.
func NamespacedInstallRules() (cluster, watched, operator []rbacv1.PolicyRule, err error) {
	root, err := testbin.RepoRoot()
	if err != nil {
		return nil, nil, nil, err
	}
	read := func(rel string) ([]rbacv1.PolicyRule, error) {
		path := filepath.Join(root, rel)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var role rbacv1.ClusterRole // a Role's rules read the same
		if err := yaml.Unmarshal(data, &role); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return role.Rules, nil
	}
	if cluster, err = read(rbacscope.KustomizeClusterRole); err != nil {
		return nil, nil, nil, err
	}
	if watched, err = read(rbacscope.KustomizeWatchedRole); err != nil {
		return nil, nil, nil, err
	}
	if operator, err = read(rbacscope.KustomizeOperatorRole); err != nil {
		return nil, nil, nil, err
	}
	return cluster, watched, operator, nil
}

// OperatorClusterRole is the ClusterRole make generate writes from the
// controllers' markers, config/rbac/role.yaml.
func OperatorClusterRole() (*rbacv1.ClusterRole, error) {
	root, err := testbin.RepoRoot()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(root, "config", "rbac", "role.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(data, &role); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &role, nil
}
