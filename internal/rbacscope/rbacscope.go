// Package rbacscope splits the operator's ClusterRole, generated from the
// controllers' markers into config/rbac/role.yaml, into the roles of a
// namespace-scoped install (--watch-namespaces): a Role for each watched
// namespace, a Role for the operator's own namespace and a small ClusterRole
// for what has no namespace. The markers stay the only list of grants;
// make generate writes the split, and a test fails while the committed
// files differ from it.
package rbacscope

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// Scope is where a namespace-scoped install grants a resource; a resource
// may be granted in several places.
type Scope uint8

const (
	// Cluster: a cluster-scoped kind, granted by a ClusterRole.
	Cluster Scope = 1 << iota
	// Watched: granted by a Role in every watched namespace.
	Watched
	// Operator: granted by a Role in the operator's own namespace.
	Operator
)

// Scopes places every resource the operator's ClusterRole names. A marker
// naming a resource missing here fails make generate: whoever adds a grant
// decides where a namespace-scoped install holds it.
var Scopes = map[schema.GroupResource]Scope{
	// A cluster's own objects, in its namespace.
	{Group: "", Resource: "pods"}:                                       Watched,
	{Group: "", Resource: "configmaps"}:                                 Watched,
	{Group: "", Resource: "persistentvolumeclaims"}:                     Watched,
	{Group: "", Resource: "secrets"}:                                    Watched,
	{Group: "", Resource: "services"}:                                   Watched,
	{Group: "policy", Resource: "poddisruptionbudgets"}:                 Watched,
	{Group: "networking.k8s.io", Resource: "networkpolicies"}:           Watched,
	{Group: "valkey.gomomento.com", Resource: "valkeyclusters"}:         Watched,
	{Group: "valkey.gomomento.com", Resource: "valkeynodes"}:            Watched,
	{Group: "valkey.gomomento.com", Resource: "valkeybackups"}:          Watched,
	{Group: "valkey.gomomento.com", Resource: "valkeyscheduledbackups"}: Watched,
	{Group: "valkey.gomomento.com", Resource: "valkeymeteringrecords"}:  Operator,
	// Events go where the object they are about is: a cluster's in its
	// namespace, a metering record's in the operator's.
	{Group: "events.k8s.io", Resource: "events"}: Watched | Operator,
	// A persistent node's volume and the Kubernetes node it is pinned
	// to have no namespace.
	{Group: "", Resource: "persistentvolumes"}: Cluster,
	{Group: "", Resource: "nodes"}:             Cluster,
	// The platform team's menu has no namespace.
	{Group: "valkey.gomomento.com", Resource: "valkeyconfigs"}: Cluster,
	{Group: "valkey.gomomento.com", Resource: "valkeyimages"}:  Cluster,
	{Group: "valkey.gomomento.com", Resource: "valkeyroles"}:   Cluster,
	// Whether a claim's StorageClass allows expansion.
	{Group: "storage.k8s.io", Resource: "storageclasses"}: Cluster,
	// The metrics endpoint's reviews are not namespaced.
	{Group: "authentication.k8s.io", Resource: "tokenreviews"}:        Cluster,
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}: Cluster,
}

// split is the rules of a namespace-scoped install: those of the cluster,
// of each watched namespace and of the operator's namespace. A rule naming
// resources of different scopes is cut into one rule per scope; a
// subresource goes where its resource does.
func split(rules []rbacv1.PolicyRule, scopes map[schema.GroupResource]Scope) (cluster, watched, operator []rbacv1.PolicyRule, err error) {
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 || len(r.ResourceNames) > 0 {
			return nil, nil, nil, fmt.Errorf("rule %+v: only resource rules without names can be split", r)
		}
		byScope := map[Scope][]string{}
		for _, res := range r.Resources {
			base, _, _ := strings.Cut(res, "/")
			var s Scope
			for _, g := range r.APIGroups {
				gs, ok := scopes[schema.GroupResource{Group: g, Resource: base}]
				if !ok {
					return nil, nil, nil, fmt.Errorf("resource %s of group %q has no scope in rbacscope.Scopes: say where a namespace-scoped install grants it", res, g)
				}
				if s != 0 && gs != s {
					return nil, nil, nil, fmt.Errorf("rule %+v: resource %s has different scopes in its groups", r, res)
				}
				s = gs
			}
			for _, one := range []Scope{Cluster, Watched, Operator} {
				if s&one != 0 {
					byScope[one] = append(byScope[one], res)
				}
			}
		}
		part := func(s Scope) []rbacv1.PolicyRule {
			if len(byScope[s]) == 0 {
				return nil
			}
			return []rbacv1.PolicyRule{{APIGroups: slices.Clone(r.APIGroups), Resources: byScope[s], Verbs: slices.Clone(r.Verbs)}}
		}
		cluster = append(cluster, part(Cluster)...)
		watched = append(watched, part(Watched)...)
		operator = append(operator, part(Operator)...)
	}
	return cluster, watched, operator, nil
}

// Names of the namespace-scoped install's roles; each is bound to the
// operator's ServiceAccount under the same name.
const (
	ClusterRoleName  = "valkey-operator-cluster-wide"
	WatchedRoleName  = "valkey-operator"
	OperatorRoleName = "valkey-operator-metering"
)

// The generated files, relative to the repository root.
const (
	KustomizeClusterRole  = "config/namespaced/cluster_role.yaml"
	KustomizeOperatorRole = "config/namespaced/operator_role.yaml"
	KustomizeWatchedRole  = "config/namespaced/watched/role.yaml"
	ChartTemplate         = "charts/valkey-operator/templates/namespaced-rbac.yaml"
)

const header = "# Generated by make generate from config/rbac/role.yaml; do not edit.\n"

// Files are the generated files, by path relative to the repository root,
// from the contents of config/rbac/role.yaml.
func Files(roleYAML []byte) (map[string][]byte, error) {
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict([]byte(strings.TrimPrefix(string(roleYAML), "---\n")), &role); err != nil {
		return nil, fmt.Errorf("reading the generated ClusterRole: %w", err)
	}
	cluster, watched, operator, err := split(role.Rules, Scopes)
	if err != nil {
		return nil, err
	}
	rules := map[string]string{}
	for name, r := range map[string][]rbacv1.PolicyRule{"cluster": cluster, "watched": watched, "operator": operator} {
		y, err := yaml.Marshal(map[string]any{"rules": r})
		if err != nil {
			return nil, fmt.Errorf("writing the %s rules: %w", name, err)
		}
		rules[name] = string(y)
	}
	kustomizeObject := func(kind, name, namespace, rules string) []byte {
		ns := ""
		if namespace != "" {
			ns = "  namespace: " + namespace + "\n"
		}
		return []byte(header + "apiVersion: rbac.authorization.k8s.io/v1\nkind: " + kind + "\nmetadata:\n  name: " + name + "\n" + ns +
			"  labels:\n    app: valkey-operator\n" + rules)
	}
	return map[string][]byte{
		KustomizeClusterRole:  kustomizeObject("ClusterRole", ClusterRoleName, "", rules["cluster"]),
		KustomizeOperatorRole: kustomizeObject("Role", OperatorRoleName, "valkey-operator", rules["operator"]),
		// The namespace is each watched namespace's kustomization's.
		KustomizeWatchedRole: kustomizeObject("Role", WatchedRoleName, "", rules["watched"]),
		ChartTemplate:        []byte(chartTemplate(rules["cluster"], rules["watched"], rules["operator"])),
	}, nil
}

func chartTemplate(cluster, watched, operator string) string {
	binding := func(kind, roleKind, name, namespace, labels string) string {
		ns := ""
		if namespace != "" {
			ns = "  namespace: " + namespace + "\n"
		}
		return "apiVersion: rbac.authorization.k8s.io/v1\nkind: " + kind + "\nmetadata:\n  name: " + name + "\n" + ns +
			"  labels:\n    {{- include \"valkey-operator.labels\" " + labels + " | nindent 4 }}\n" +
			"roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: " + roleKind + "\n  name: " + name + "\n" +
			"subjects:\n- kind: ServiceAccount\n  name: valkey-operator\n  namespace: {{ $.Release.Namespace }}\n"
	}
	role := func(kind, name, namespace, labels, rules string) string {
		ns := ""
		if namespace != "" {
			ns = "  namespace: " + namespace + "\n"
		}
		return "apiVersion: rbac.authorization.k8s.io/v1\nkind: " + kind + "\nmetadata:\n  name: " + name + "\n" + ns +
			"  labels:\n    {{- include \"valkey-operator.labels\" " + labels + " | nindent 4 }}\n" + rules
	}
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("# With watchNamespaces set, these replace the ClusterRole valkey-operator:\n")
	b.WriteString("# namespaced grants in each watched namespace, the metering records in the\n")
	b.WriteString("# release namespace, and cluster-wide only what has no namespace.\n")
	b.WriteString("{{- if .Values.watchNamespaces }}\n")
	b.WriteString(role("ClusterRole", ClusterRoleName, "", ".", cluster))
	b.WriteString("---\n")
	b.WriteString(binding("ClusterRoleBinding", "ClusterRole", ClusterRoleName, "", "."))
	b.WriteString("---\n")
	b.WriteString(role("Role", OperatorRoleName, "{{ .Release.Namespace }}", ".", operator))
	b.WriteString("---\n")
	b.WriteString(binding("RoleBinding", "Role", OperatorRoleName, "{{ .Release.Namespace }}", "."))
	b.WriteString("{{- range .Values.watchNamespaces }}\n---\n")
	b.WriteString(role("Role", WatchedRoleName, "{{ . }}", "$", watched))
	b.WriteString("---\n")
	b.WriteString(binding("RoleBinding", "Role", WatchedRoleName, "{{ . }}", "$"))
	b.WriteString("{{- end }}\n{{- end }}\n")
	return b.String()
}
