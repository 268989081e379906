package manifests

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gomomento/valkey-operator/internal/rbacscope"
)

// What config/namespaced installs beyond the CRDs, by kind, namespace and
// name: the ClusterRole valkey-operator and its binding are gone.
var wantNamespacedRBAC = []string{
	"ClusterRole//valkey-operator-cluster-wide",
	"ClusterRole//valkey-operator-metrics-reader",
	"ClusterRoleBinding//valkey-operator-cluster-wide",
	"Deployment/valkey-operator/valkey-operator",
	"Namespace//valkey-operator",
	"Role/team-a/valkey-operator",
	"Role/team-b/valkey-operator",
	"Role/valkey-operator/valkey-operator-leader-election",
	"Role/valkey-operator/valkey-operator-metering",
	"RoleBinding/team-a/valkey-operator",
	"RoleBinding/team-b/valkey-operator",
	"RoleBinding/valkey-operator/valkey-operator-leader-election",
	"RoleBinding/valkey-operator/valkey-operator-metering",
	"Service/valkey-operator/valkey-operator-metrics",
	"ServiceAccount/valkey-operator/valkey-operator",
}

func nsKeys(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			out = append(out, o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
		}
	}
	slices.Sort(out)
	return out
}

func TestKustomizeNamespacedDryRun(t *testing.T) {
	objs := kustomizeBuild(t, repoPath(t, "config", "namespaced"))
	if got := nsKeys(objs); !slices.Equal(got, wantNamespacedRBAC) {
		t.Fatalf("config/namespaced renders %v, want %v", got, wantNamespacedRBAC)
	}
	dep := find(t, objs, "Deployment", "valkey-operator")
	checkOperatorDeployment(t, dep, "gomomento/valkey-operator:latest", 2)
	if args := convert[appsv1.Deployment](t, dep).Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--watch-namespaces=team-a,team-b") {
		t.Errorf("args %v lack --watch-namespaces=team-a,team-b", args)
	}
	checkNamespacedRBAC(t, objs, operatorNamespace, []string{"team-a", "team-b"})

	for _, ns := range []string{operatorNamespace, "team-a", "team-b"} {
		restrictedNamespace(t, ns)
	}
	dryRunApply(t, objs)
	dryRunPodOf(t, dep)
}

func TestChartWatchNamespacesDryRun(t *testing.T) {
	const ns = "helm-scoped"
	objs := mustHelmTemplate(t, ns, "watchNamespaces: [team-a, team-c]\n")
	dep := find(t, objs, "Deployment", "valkey-operator")
	checkOperatorDeployment(t, dep, "gomomento/valkey-operator:latest", 2)
	if args := convert[appsv1.Deployment](t, dep).Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--watch-namespaces=team-a,team-c") {
		t.Errorf("args %v lack --watch-namespaces=team-a,team-c", args)
	}
	for _, o := range objs {
		if k := o.GetKind(); (k == "ClusterRole" || k == "ClusterRoleBinding") && o.GetName() == "valkey-operator" {
			t.Errorf("%s rendered with watchNamespaces set", describe(o))
		}
	}
	checkNamespacedRBAC(t, objs, ns, []string{"team-a", "team-c"})

	// The same rules as the kustomize overlay's.
	kust := kustomizeBuild(t, repoPath(t, "config", "namespaced"))
	for _, kind := range []struct{ kind, name string }{
		{"ClusterRole", rbacscope.ClusterRoleName}, {"Role", rbacscope.OperatorRoleName}, {"Role", rbacscope.WatchedRoleName},
	} {
		got := find(t, objs, kind.kind, kind.name).Object["rules"]
		want := find(t, kust, kind.kind, kind.name).Object["rules"]
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s %s: the chart's rules %v, config/namespaced's %v", kind.kind, kind.name, got, want)
		}
	}

	for _, n := range []string{ns, "team-a", "team-c"} {
		restrictedNamespace(t, n)
	}
	dryRunApply(t, objs)
	dryRunPodOf(t, dep)
}

func TestChartRefusesBadWatchNamespaces(t *testing.T) {
	tests := []struct{ name, values, want string }{
		{"an empty name", "watchNamespaces: [team-a, \"\"]\n", "a namespace name is empty"},
		{"a name twice", "watchNamespaces: [team-a, team-b, team-a]\n", "listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := helmTemplate(t, "helm-bad", tt.values)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("values %q: error %v, want one containing %q", tt.values, err, tt.want)
			}
		})
	}
}

// checkNamespacedRBAC: no ClusterRole of the install grants Secrets or
// Pods; each watched namespace's Role and the operator's metering Role are
// bound to the operator's ServiceAccount; and every grant is where the
// apiserver says its resource lives: ClusterRoles name cluster-scoped
// resources only, Roles namespaced ones only.
func checkNamespacedRBAC(t *testing.T, objs []*unstructured.Unstructured, namespace string, watched []string) {
	t.Helper()
	sa := rbacv1.Subject{Kind: "ServiceAccount", Name: "valkey-operator", Namespace: namespace}
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole":
			for _, r := range convert[rbacv1.ClusterRole](t, o).Rules {
				for _, res := range r.Resources {
					if strings.HasPrefix(res, "secrets") || strings.HasPrefix(res, "pods") || res == "*" {
						t.Errorf("%s grants %v on %s in every namespace", describe(o), r.Verbs, res)
					}
				}
				checkScope(t, o, r, false)
			}
		case "Role":
			for _, r := range convert[rbacv1.Role](t, o).Rules {
				checkScope(t, o, r, true)
			}
		}
	}
	bound := func(kind, roleKind, ns, name string) {
		t.Helper()
		var ref rbacv1.RoleRef
		var subjects []rbacv1.Subject
		for _, o := range objs {
			if o.GetKind() == kind && o.GetNamespace() == ns && o.GetName() == name {
				if kind == "RoleBinding" {
					b := convert[rbacv1.RoleBinding](t, o)
					ref, subjects = b.RoleRef, b.Subjects
				} else {
					b := convert[rbacv1.ClusterRoleBinding](t, o)
					ref, subjects = b.RoleRef, b.Subjects
				}
			}
		}
		if ref != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: roleKind, Name: name}) || !reflect.DeepEqual(subjects, []rbacv1.Subject{sa}) {
			t.Errorf("%s %s/%s: roleRef %+v subjects %+v, want %s %s bound to %+v", kind, ns, name, ref, subjects, roleKind, name, sa)
		}
	}
	bound("ClusterRoleBinding", "ClusterRole", "", rbacscope.ClusterRoleName)
	bound("RoleBinding", "Role", namespace, rbacscope.OperatorRoleName)
	for _, ns := range watched {
		bound("RoleBinding", "Role", ns, rbacscope.WatchedRoleName)
		role := convert[rbacv1.Role](t, findIn(t, objs, "Role", ns, rbacscope.WatchedRoleName))
		if !grantsOn(role.Rules, "", "secrets", "create") || !grantsOn(role.Rules, "valkey.gomomento.com", "valkeynodes", "create") {
			t.Errorf("Role %s/%s does not grant creating Secrets and ValkeyNodes: %+v", ns, role.Name, role.Rules)
		}
	}
	metering := convert[rbacv1.Role](t, findIn(t, objs, "Role", namespace, rbacscope.OperatorRoleName))
	if !grantsOn(metering.Rules, "valkey.gomomento.com", "valkeymeteringrecords", "create") || grantsOn(metering.Rules, "", "secrets", "get") {
		t.Errorf("Role %s/%s: want the metering records and no Secrets: %+v", namespace, metering.Name, metering.Rules)
	}
}

// checkScope asks the apiserver whether each resource of rule r is
// namespaced, as a Role's must be and a ClusterRole's must not.
func checkScope(t *testing.T, o *unstructured.Unstructured, r rbacv1.PolicyRule, namespaced bool) {
	t.Helper()
	for _, g := range r.APIGroups {
		for _, res := range r.Resources {
			base, _, _ := strings.Cut(res, "/")
			gvk, err := env.Client.RESTMapper().KindFor(schema.GroupVersionResource{Group: g, Resource: base})
			if err != nil {
				t.Errorf("%s: %s of group %q is unknown to the apiserver: %v", describe(o), res, g, err)
				continue
			}
			mapping, err := env.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Errorf("%s: mapping %v: %v", describe(o), gvk, err)
				continue
			}
			if got := mapping.Scope.Name() == meta.RESTScopeNameNamespace; got != namespaced {
				t.Errorf("%s grants %s of group %q, which is scoped to the %s", describe(o), res, g, mapping.Scope.Name())
			}
		}
	}
}

func grantsOn(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

func findIn(t *testing.T, objs []*unstructured.Unstructured, kind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetNamespace() == namespace && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s/%s among %v", kind, namespace, name, nsKeys(objs))
	return nil
}
