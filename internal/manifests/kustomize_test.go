package manifests

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

const operatorNamespace = "valkey-operator"

// What config/default installs, by kind/name.
var wantInstall = []string{
	"ClusterRole/valkey-operator",
	"ClusterRole/valkey-operator-metrics-reader",
	"ClusterRoleBinding/valkey-operator",
	"CustomResourceDefinition/valkeybackups.valkey.gomomento.com",
	"CustomResourceDefinition/valkeyclusters.valkey.gomomento.com",
	"CustomResourceDefinition/valkeyconfigs.valkey.gomomento.com",
	"CustomResourceDefinition/valkeyimages.valkey.gomomento.com",
	"CustomResourceDefinition/valkeymeteringrecords.valkey.gomomento.com",
	"CustomResourceDefinition/valkeynodes.valkey.gomomento.com",
	"CustomResourceDefinition/valkeyroles.valkey.gomomento.com",
	"CustomResourceDefinition/valkeyscheduledbackups.valkey.gomomento.com",
	"Deployment/valkey-operator",
	"Namespace/valkey-operator",
	"Role/valkey-operator-leader-election",
	"RoleBinding/valkey-operator-leader-election",
	"Service/valkey-operator-metrics",
	"ServiceAccount/valkey-operator",
}

func TestKustomizeDefaultDryRun(t *testing.T) {
	objs := kustomizeBuild(t, repoPath(t, "config", "default"))
	if got := keys(objs); !slices.Equal(got, wantInstall) {
		t.Fatalf("config/default renders %v, want %v", got, wantInstall)
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding":
			if o.GetNamespace() != "" {
				t.Errorf("%s is cluster-scoped but names a namespace", describe(o))
			}
		default:
			if o.GetNamespace() != operatorNamespace {
				t.Errorf("%s is not in %s", describe(o), operatorNamespace)
			}
		}
		if o.GetLabels()["app"] != "valkey-operator" && o.GetKind() != "CustomResourceDefinition" && o.GetKind() != "ClusterRole" {
			t.Errorf("%s lacks label app: valkey-operator", describe(o))
		}
	}
	dep := find(t, objs, "Deployment", "valkey-operator")
	checkOperatorDeployment(t, dep, "gomomento/valkey-operator:latest", 2)
	if got := convert[appsv1.Deployment](t, dep).Spec.Template.Spec.Containers[0].Resources; !equality.Semantic.DeepEqual(got, defaultResources) {
		t.Errorf("resources %+v, want %+v", got, defaultResources)
	}
	for _, p := range convert[appsv1.Deployment](t, dep).Spec.Template.Spec.Containers[0].Ports {
		if want := map[string]int32{"metrics": 8443, "health": 8081, "restore-feed": 7380}[p.Name]; p.ContainerPort != want {
			t.Errorf("port %s is %d, want %d", p.Name, p.ContainerPort, want)
		}
	}
	checkRBAC(t, objs, operatorNamespace)

	ns := find(t, objs, "Namespace", operatorNamespace)
	if ns.GetLabels()["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("namespace %s does not enforce the restricted Pod Security Standard", operatorNamespace)
	}
	createForReal(t, ns)
	dryRunApply(t, objs)
	dryRunPodOf(t, find(t, objs, "Deployment", "valkey-operator"))
}

// The image is chosen in the kustomization, as `kustomize edit set image` does.
func TestKustomizeImageOverride(t *testing.T) {
	dir := t.TempDir()
	kust := `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- default
images:
- name: gomomento/valkey-operator
  newName: registry.example.com/valkey-operator
  newTag: v1.2.3
`
	// Kustomize keeps loaded files inside a root, so the overlay sits next
	// to a copy of config/.
	if err := os.CopyFS(filepath.Join(dir, "base"), os.DirFS(repoPath(t, "config"))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "base", "kustomization.yaml"), []byte(kust), 0o644); err != nil {
		t.Fatal(err)
	}
	objs := kustomizeBuild(t, filepath.Join(dir, "base"))
	dep := convert[appsv1.Deployment](t, find(t, objs, "Deployment", "valkey-operator"))
	if got := dep.Spec.Template.Spec.Containers[0].Image; got != "registry.example.com/valkey-operator:v1.2.3" {
		t.Fatalf("image %q after the override", got)
	}
}

// A kind added to the API must reach the install.
func TestCRDKustomizationListsEveryBase(t *testing.T) {
	data, err := os.ReadFile(repoPath(t, "config", "crd", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var kust struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &kust); err != nil {
		t.Fatal(err)
	}
	bases, err := filepath.Glob(repoPath(t, "config", "crd", "bases", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, b := range bases {
		want = append(want, "bases/"+filepath.Base(b))
	}
	slices.Sort(kust.Resources)
	if !slices.Equal(kust.Resources, want) {
		t.Fatalf("config/crd/kustomization.yaml lists %v, config/crd/bases holds %v", kust.Resources, want)
	}
}

// checkOperatorDeployment holds the production settings both installs share.
func checkOperatorDeployment(t *testing.T, obj *unstructured.Unstructured, image string, replicas int32) {
	t.Helper()
	dep := convert[appsv1.Deployment](t, obj)
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != replicas {
		t.Errorf("replicas %v, want %d", dep.Spec.Replicas, replicas)
	}
	if dep.Spec.Selector.MatchLabels["app"] != "valkey-operator" || dep.Spec.Template.Labels["app"] != "valkey-operator" {
		t.Errorf("selector %v, pod labels %v: want app: valkey-operator", dep.Spec.Selector.MatchLabels, dep.Spec.Template.Labels)
	}
	pod := dep.Spec.Template.Spec
	if pod.ServiceAccountName != "valkey-operator" {
		t.Errorf("service account %q", pod.ServiceAccountName)
	}
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v: want runAsNonRoot and RuntimeDefault seccomp", psc)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Image != image {
		t.Errorf("image %q, want %q", c.Image, image)
	}
	if (replicas > 1) != slices.Contains(c.Args, "--leader-elect") {
		t.Errorf("args %v with %d replicas: leader election is needed exactly when there are several", c.Args, replicas)
	}
	csc := c.SecurityContext
	if csc == nil || csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation ||
		csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem ||
		csc.Capabilities == nil || !slices.Equal(csc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container securityContext %+v", csc)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["health"] == 0 || (ports["metrics"] == 0) != slices.Contains(c.Args, "--metrics-bind-address=0") {
		t.Errorf("ports %v, args %v: want a health port, and a metrics port unless metrics are off", ports, c.Args)
	}
	if slices.Contains(c.Args, "--metrics-secure=false") {
		t.Errorf("args %v: metrics must be served over HTTPS to authorized callers", c.Args)
	}
	for probe, path := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.String() != "health" {
			t.Errorf("probe %+v: want GET %s on port health", probe, path)
		}
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		if req.IsZero() || lim.IsZero() || req.Cmp(lim) > 0 {
			t.Errorf("%s request %s limit %s", r, req.String(), lim.String())
		}
	}
	var zone, podNamespace *corev1.EnvVar
	for i := range c.Env {
		switch c.Env[i].Name {
		case "DEFAULT_ZONE_SPREAD":
			zone = &c.Env[i]
		case "POD_NAMESPACE":
			podNamespace = &c.Env[i]
		}
	}
	// The operator's namespace is what each Valkey NetworkPolicy admits.
	if podNamespace == nil || podNamespace.ValueFrom == nil || podNamespace.ValueFrom.FieldRef == nil ||
		podNamespace.ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("env %v: want POD_NAMESPACE from the downward API's metadata.namespace", c.Env)
	}
	if zone == nil || zone.ValueFrom == nil || zone.ValueFrom.ConfigMapKeyRef == nil {
		t.Fatalf("env %v: want DEFAULT_ZONE_SPREAD from a ConfigMap", c.Env)
	}
	ref := zone.ValueFrom.ConfigMapKeyRef
	if ref.Name != "valkey-operator-config" || ref.Key != "defaultZoneSpread" || ref.Optional == nil || !*ref.Optional {
		t.Errorf("DEFAULT_ZONE_SPREAD from %+v: want optional valkey-operator-config/defaultZoneSpread", ref)
	}
}

// defaultResources are config/manager's, which the chart's values repeat.
var defaultResources = corev1.ResourceRequirements{
	Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
	Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
}

// checkRBAC: the generated ClusterRole is bound to the operator's
// ServiceAccount, and leader election is granted in its namespace only.
func checkRBAC(t *testing.T, objs []*unstructured.Unstructured, namespace string) {
	t.Helper()
	sa := rbacv1.Subject{Kind: "ServiceAccount", Name: "valkey-operator", Namespace: namespace}
	crb := convert[rbacv1.ClusterRoleBinding](t, find(t, objs, "ClusterRoleBinding", "valkey-operator"))
	if crb.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "valkey-operator"}) ||
		!reflect.DeepEqual(crb.Subjects, []rbacv1.Subject{sa}) {
		t.Errorf("ClusterRoleBinding %+v %+v", crb.RoleRef, crb.Subjects)
	}
	rb := convert[rbacv1.RoleBinding](t, find(t, objs, "RoleBinding", "valkey-operator-leader-election"))
	if rb.Namespace != namespace || rb.RoleRef.Kind != "Role" || !reflect.DeepEqual(rb.Subjects, []rbacv1.Subject{sa}) {
		t.Errorf("leader election RoleBinding %+v", rb)
	}
	role := convert[rbacv1.Role](t, find(t, objs, "Role", "valkey-operator-leader-election"))
	leases := false
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, "coordination.k8s.io") && slices.Contains(r.Resources, "leases") {
			leases = slices.Contains(r.Verbs, "update") && slices.Contains(r.Verbs, "create")
		}
		if slices.Contains(r.Verbs, "*") || slices.Contains(r.Resources, "*") {
			t.Errorf("leader election Role grants a wildcard: %+v", r)
		}
	}
	if role.Namespace != namespace || !leases {
		t.Errorf("leader election Role %+v: want leases create/update in %s", role, namespace)
	}
	reader := convert[rbacv1.ClusterRole](t, find(t, objs, "ClusterRole", "valkey-operator-metrics-reader"))
	if want := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}; !reflect.DeepEqual(reader.Rules, want) {
		t.Errorf("metrics reader rules %+v, want %+v", reader.Rules, want)
	}
	// Leases are written only for leader election, in the operator's own
	// namespace: the cluster-wide role must not grant them anywhere else.
	for _, r := range convert[rbacv1.ClusterRole](t, find(t, objs, "ClusterRole", "valkey-operator")).Rules {
		if slices.Contains(r.Resources, "leases") || slices.Contains(r.Resources, "*") || slices.Contains(r.Verbs, "*") {
			t.Errorf("ClusterRole grants %v on %v in %v cluster-wide", r.Verbs, r.Resources, r.APIGroups)
		}
	}
}

// The pod dry runs above prove something only if the apiserver enforces Pod
// Security: the operator's pod template without its securityContext must be
// refused.
func TestDryRunEnforcesPodSecurity(t *testing.T) {
	const ns = "restricted-control"
	restrictedNamespace(t, ns)
	dep := find(t, kustomizeBuild(t, repoPath(t, "config", "default")), "Deployment", "valkey-operator").DeepCopy()
	dep.SetNamespace(ns)
	unstructured.RemoveNestedField(dep.Object, "spec", "template", "spec", "securityContext")
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	delete(containers[0].(map[string]any), "securityContext")
	if err := unstructured.SetNestedSlice(dep.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	tmpl, _, _ := unstructured.NestedMap(dep.Object, "spec", "template")
	pod := &unstructured.Unstructured{Object: tmpl}
	pod.SetAPIVersion("v1")
	pod.SetKind("Pod")
	pod.SetNamespace(ns)
	pod.SetName("no-security-context")
	err := env.Client.Create(context.Background(), pod, client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), "PodSecurity") {
		t.Fatalf("a pod without securityContext in a restricted namespace: %v, want a PodSecurity refusal", err)
	}
}
