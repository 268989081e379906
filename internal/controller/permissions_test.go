package controller_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/apischeme"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/resolve"
)

// The ClusterRole config/rbac/role.yaml, generated from the
// +kubebuilder:rbac markers, grants exactly what the operator's code
// needs: a call the code starts making must come with its marker, and a
// verb the code stops using must leave the markers.
func TestClusterRoleMatchesCode(t *testing.T) {
	scheme, err := apischeme.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	code := scanCalls(t, ".", scheme)
	for g, where := range blockingOwnerGrants(t) {
		code[g] = append(code[g], where)
	}
	role := roleGrants(t, filepath.Join("..", "..", "config", "rbac", "role.yaml"))

	var missing, unused []string
	for g, where := range code {
		if !role[g] {
			slices.Sort(where)
			missing = append(missing, fmt.Sprintf("  %s (needed at %s)", g, strings.Join(slices.Compact(where), ", ")))
		}
	}
	for g := range role {
		if _, ok := code[g]; !ok {
			unused = append(unused, "  "+g.String())
		}
	}
	sort.Strings(missing)
	sort.Strings(unused)
	if len(missing) > 0 {
		t.Errorf("the code needs what the ClusterRole does not grant; add +kubebuilder:rbac markers and run make generate:\n%s", strings.Join(missing, "\n"))
	}
	if len(unused) > 0 {
		t.Errorf("the ClusterRole grants what no code uses; remove it from the +kubebuilder:rbac markers and run make generate:\n%s", strings.Join(unused, "\n"))
	}
	if t.Failed() {
		t.Logf("what the code needs:\n  %s", strings.Join(sortedGrants(code), "\n  "))
	}
}

// blockingOwnerGrants: creating an object whose owner reference blocks the
// owner's deletion needs update on the owner's finalizers subresource
// (admission plugin OwnerReferencesPermissionEnforcement). The owners are
// read from what the renderers build.
func blockingOwnerGrants(t *testing.T) map[grant]string {
	t.Helper()
	vc := &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "cluster-uid"},
		Spec:       valkeyv1.ValkeyClusterSpec{ConfigRef: "cfg", Shards: 1, TLS: &valkeyv1.TLSSpec{SecretRef: "tls"}},
	}
	rc := render.Cluster{Cluster: vc}
	res := &resolve.Result{Image: "valkey/valkey:8.0.1", Version: "8.0.1", CPU: "500m", Memory: "1Gi", Chain: []string{"cfg"}}
	node, err := rc.Node("c-00000", res, 0, valkeyv1.JoinTypePrimary)
	if err != nil {
		t.Fatal(err)
	}
	node.UID = "node-uid"
	pod, err := rc.Pod(node)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := rc.NodeConfigMap(node)
	if err != nil {
		t.Fatal(err)
	}
	acl, err := rc.ACLSecret(nil, render.Passwords{}, "8.0.1", false)
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{node, pod, cm, acl, rc.Service(), rc.PodDisruptionBudget(0, 1),
		rc.OperatorAuthSecret(render.Passwords{}), rc.NodeTLSSecret(&corev1.Secret{})}
	out := map[grant]string{}
	for _, o := range objs {
		for _, ref := range o.GetOwnerReferences() {
			if ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
				continue
			}
			gv, err := schema.ParseGroupVersion(ref.APIVersion)
			if err != nil {
				t.Fatal(err)
			}
			plural, _ := meta.UnsafeGuessKindToResource(gv.WithKind(ref.Kind))
			out[grant{group: gv.Group, resource: plural.Resource + "/finalizers", verb: "update"}] = fmt.Sprintf("owner of %T", o)
		}
	}
	return out
}

// roleGrants expands a ClusterRole's rules into single grants.
func roleGrants(t *testing.T, path string) map[grant]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(data, &role); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[grant]bool{}
	for _, r := range role.Rules {
		if len(r.NonResourceURLs) > 0 || len(r.ResourceNames) > 0 {
			t.Errorf("%s: rule %+v: the operator's role has resource rules only", path, r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					if g == "*" || res == "*" || v == "*" {
						t.Errorf("%s: rule %+v grants a wildcard", path, r)
					}
					out[grant{group: g, resource: res, verb: v}] = true
				}
			}
		}
	}
	return out
}

// The scan's rules, on a package that calls each once.
func TestScanRules(t *testing.T) {
	scheme, err := apischeme.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	got := sortedGrants(scanCalls(t, filepath.Join("testdata", "permscan"), scheme))
	want := []string{
		"authentication.k8s.io tokenreviews create",
		"authorization.k8s.io subjectaccessreviews create",
		"core configmaps create",
		"core endpoints list",
		"core endpoints watch",
		"core limitranges list",
		"core limitranges watch",
		"core namespaces list",
		"core namespaces watch",
		"core nodes list",
		"core nodes watch",
		"core persistentvolumeclaims watch",
		"core pods list",
		"core pods watch",
		"core pods/status patch",
		"core secrets get",
		"core services delete",
		"events.k8s.io events create",
		"events.k8s.io events patch",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("scan of testdata/permscan:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// What `kubectl auth can-i --list` shows for the operator's user, asked of
// a live apiserver holding the generated ClusterRole: exactly what the code
// needs, plus the self-review rules every authenticated user has.
func TestOperatorCanIListMatchesCode(t *testing.T) {
	scheme, err := apischeme.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	code := scanCalls(t, ".", scheme)
	for g, where := range blockingOwnerGrants(t) {
		code[g] = append(code[g], where)
	}
	c, err := client.New(operatorConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	review := &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "default"}}
	if err := c.Create(context.Background(), review); err != nil {
		t.Fatal(err)
	}
	if review.Status.Incomplete {
		t.Fatalf("rules review incomplete: %s", review.Status.EvaluationError)
	}
	everyone := map[string]bool{"selfsubjectaccessreviews": true, "selfsubjectrulesreviews": true, "selfsubjectreviews": true}
	granted := map[grant]bool{}
	for _, r := range review.Status.ResourceRules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if everyone[res] {
					continue
				}
				for _, v := range r.Verbs {
					granted[grant{group: g, resource: res, verb: v}] = true
				}
			}
		}
	}
	var extra, missing []string
	for g := range granted {
		if _, ok := code[g]; !ok {
			extra = append(extra, g.String())
		}
	}
	for g := range code {
		if !granted[g] {
			missing = append(missing, g.String())
		}
	}
	sort.Strings(extra)
	sort.Strings(missing)
	if len(extra) > 0 || len(missing) > 0 {
		t.Fatalf("can-i --list for the operator: granted but unused %v; used but not granted %v", extra, missing)
	}
}
