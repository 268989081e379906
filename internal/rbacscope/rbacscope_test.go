package rbacscope

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/gomomento/valkey-operator/internal/testbin"
)

func repoFile(t *testing.T, rel string) []byte {
	t.Helper()
	root, err := testbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The committed roles of the namespace-scoped install are what make
// generate writes from the current markers.
func TestGeneratedFilesAreFresh(t *testing.T) {
	files, err := Files(repoFile(t, "config/rbac/role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range files {
		if got := repoFile(t, path); !bytes.Equal(got, want) {
			t.Errorf("%s differs from what config/rbac/role.yaml gives; run make generate", path)
		}
	}
}

func TestSplit(t *testing.T) {
	scopes := map[schema.GroupResource]Scope{
		{Group: "", Resource: "secrets"}:     Watched,
		{Group: "", Resource: "events"}:      Watched | Operator,
		{Group: "x", Resource: "records"}:    Operator,
		{Group: "x", Resource: "menus"}:      Cluster,
		{Group: "y", Resource: "menus"}:      Watched,
		{Group: "x", Resource: "clusters"}:   Watched,
		{Group: "x", Resource: "nodes"}:      Watched,
		{Group: "z", Resource: "tokenviews"}: Cluster,
	}
	rule := func(group string, verbs []string, resources ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: verbs}
	}
	rw := []string{"get", "patch"}
	tests := []struct {
		name                       string
		rules                      []rbacv1.PolicyRule
		cluster, watched, operator []rbacv1.PolicyRule
		err                        string
	}{
		{name: "namespaced", rules: []rbacv1.PolicyRule{rule("", rw, "secrets")}, watched: []rbacv1.PolicyRule{rule("", rw, "secrets")}},
		{name: "cluster-scoped", rules: []rbacv1.PolicyRule{rule("z", rw, "tokenviews")}, cluster: []rbacv1.PolicyRule{rule("z", rw, "tokenviews")}},
		{name: "in both namespaces", rules: []rbacv1.PolicyRule{rule("", rw, "events")},
			watched: []rbacv1.PolicyRule{rule("", rw, "events")}, operator: []rbacv1.PolicyRule{rule("", rw, "events")}},
		{name: "a rule cut by scope", rules: []rbacv1.PolicyRule{rule("x", rw, "menus", "clusters/finalizers", "records/status", "nodes")},
			cluster:  []rbacv1.PolicyRule{rule("x", rw, "menus")},
			watched:  []rbacv1.PolicyRule{rule("x", rw, "clusters/finalizers", "nodes")},
			operator: []rbacv1.PolicyRule{rule("x", rw, "records/status")}},
		{name: "an unplaced resource", rules: []rbacv1.PolicyRule{rule("x", rw, "widgets")}, err: "widgets of group \"x\" has no scope"},
		{name: "one resource, two scopes across groups", rules: []rbacv1.PolicyRule{{APIGroups: []string{"x", "y"}, Resources: []string{"menus"}, Verbs: rw}},
			err: "different scopes"},
		{name: "a named resource", rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"s"}, Verbs: rw}},
			err: "only resource rules without names"},
		{name: "a non-resource URL", rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
			err: "only resource rules"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster, watched, operator, err := split(tt.rules, scopes)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for name, got := range map[string][2][]rbacv1.PolicyRule{
				"cluster": {cluster, tt.cluster}, "watched": {watched, tt.watched}, "operator": {operator, tt.operator},
			} {
				if !reflect.DeepEqual(got[0], got[1]) {
					t.Errorf("%s rules %+v, want %+v", name, got[0], got[1])
				}
			}
		})
	}
}

type grant struct{ group, resource, verb string }

func grants(rules []rbacv1.PolicyRule) map[grant]bool {
	out := map[grant]bool{}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out[grant{g, res, v}] = true
				}
			}
		}
	}
	return out
}

// The namespace-scoped install grants every one of the ClusterRole's
// grants somewhere, and nothing it lacks.
func TestSplitKeepsEveryGrant(t *testing.T) {
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(repoFile(t, "config/rbac/role.yaml"), &role); err != nil {
		t.Fatal(err)
	}
	cluster, watched, operator, err := split(role.Rules, Scopes)
	if err != nil {
		t.Fatal(err)
	}
	union := grants(cluster)
	for g := range grants(watched) {
		union[g] = true
	}
	for g := range grants(operator) {
		union[g] = true
	}
	if want := grants(role.Rules); !reflect.DeepEqual(union, want) {
		t.Errorf("the split grants %v, the ClusterRole %v", union, want)
	}
	for g := range grants(cluster) {
		if g.resource == "secrets" || g.resource == "pods" {
			t.Errorf("the cluster-wide part grants %v", g)
		}
	}
}

// The table's scopes of the project's own kinds are the CRDs'.
func TestScopesMatchCRDs(t *testing.T) {
	root, err := testbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no CRDs: %v", err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		s, ok := Scopes[schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}]
		if !ok {
			t.Errorf("%s has no scope in Scopes", crd.Name)
			continue
		}
		if clusterScoped := crd.Spec.Scope == apiextensionsv1.ClusterScoped; clusterScoped != (s == Cluster) {
			t.Errorf("%s is %s, Scopes says %b", crd.Name, crd.Spec.Scope, s)
		}
	}
}
