package manifests

import (
	"bytes"
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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// With its default values the chart installs what config/default does,
// except the namespace, which Helm creates (--create-namespace).
func TestChartDefaultsMatchKustomize(t *testing.T) {
	kust := kustomizeBuild(t, repoPath(t, "config", "default"))
	chart := append(mustHelmTemplate(t, operatorNamespace, ""), chartCRDs(t)...)

	var wantKeys []string
	for _, k := range wantInstall {
		if k != "Namespace/"+operatorNamespace {
			wantKeys = append(wantKeys, k)
		}
	}
	if got := keys(chart); !slices.Equal(got, wantKeys) {
		t.Fatalf("the chart renders %v, want %v", got, wantKeys)
	}
	for _, c := range chart {
		k := find(t, kust, c.GetKind(), c.GetName())
		if c.GetNamespace() != k.GetNamespace() {
			t.Errorf("%s: namespace %q, kustomize %q", key(c), c.GetNamespace(), k.GetNamespace())
		}
		if c.GetLabels()["app"] != "valkey-operator" && c.GetKind() != "CustomResourceDefinition" {
			t.Errorf("%s lacks label app: valkey-operator", describe(c))
		}
		// Everything but metadata: the chart adds Helm's labels.
		for field := range c.Object {
			if field == "metadata" {
				continue
			}
			if !equality.Semantic.DeepEqual(c.Object[field], k.Object[field]) {
				cy, _ := yaml.Marshal(c.Object[field])
				ky, _ := yaml.Marshal(k.Object[field])
				t.Errorf("%s: %s differs from config/default\nchart:\n%s\nkustomize:\n%s", key(c), field, cy, ky)
			}
		}
	}
}

func TestChartDefaultDryRun(t *testing.T) {
	const ns = "helm-default"
	objs := mustHelmTemplate(t, ns, "")
	checkOperatorDeployment(t, find(t, objs, "Deployment", "valkey-operator"), "gomomento/valkey-operator:latest", 2)
	checkRBAC(t, objs, ns)
	restrictedNamespace(t, ns)
	dryRunApply(t, chartCRDs(t))
	dryRunApply(t, objs)
	dryRunPodOf(t, find(t, objs, "Deployment", "valkey-operator"))
}

const customValues = `
image:
  repository: registry.example.com/valkey-operator
  tag: v1.2.3
  pullPolicy: IfNotPresent
imagePullSecrets:
- name: registry-credentials
replicas: 3
leaderElection:
  enabled: true
clusterDomain: cluster.example
defaultZoneSpread: required
metrics:
  port: 9090
healthProbePort: 9091
resources:
  requests:
    cpu: 50m
    memory: 64Mi
  limits:
    cpu: "1"
    memory: 1Gi
extraArgs:
- --zap-log-level=debug
podAnnotations:
  example.com/team: storage
nodeSelector:
  kubernetes.io/os: linux
tolerations:
- key: dedicated
  operator: Equal
  value: operators
  effect: NoSchedule
priorityClassName: system-cluster-critical
`

func TestChartCustomValuesDryRun(t *testing.T) {
	const ns = "helm-custom"
	objs := mustHelmTemplate(t, ns, customValues)
	depObj := find(t, objs, "Deployment", "valkey-operator")
	checkOperatorDeployment(t, depObj, "registry.example.com/valkey-operator:v1.2.3", 3)
	checkRBAC(t, objs, ns)

	dep := convert[appsv1.Deployment](t, depObj)
	c := dep.Spec.Template.Spec.Containers[0]
	for _, arg := range []string{"--metrics-bind-address=:9090", "--health-probe-bind-address=:9091", "--cluster-domain=cluster.example", "--zap-log-level=debug"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("args %v lack %s", c.Args, arg)
		}
	}
	if c.ImagePullPolicy != corev1.PullIfNotPresent || c.Resources.Limits.Memory().String() != "1Gi" {
		t.Errorf("pull policy %q, limits %v", c.ImagePullPolicy, c.Resources.Limits)
	}
	if dep.Spec.Template.Annotations["checksum/config"] == "" || dep.Spec.Template.Annotations["example.com/team"] != "storage" {
		t.Errorf("pod annotations %v: want the config checksum and podAnnotations", dep.Spec.Template.Annotations)
	}
	cm := convert[corev1.ConfigMap](t, find(t, objs, "ConfigMap", "valkey-operator-config"))
	if cm.Data["defaultZoneSpread"] != "required" {
		t.Errorf("ConfigMap data %v", cm.Data)
	}
	svc := convert[corev1.Service](t, find(t, objs, "Service", "valkey-operator-metrics"))
	if svc.Spec.Ports[0].Port != 9090 {
		t.Errorf("metrics Service ports %+v", svc.Spec.Ports)
	}

	restrictedNamespace(t, ns)
	dryRunApply(t, objs)
	dryRunPodOf(t, depObj)
}

func TestChartValueVariants(t *testing.T) {
	t.Run("single replica without leader election", func(t *testing.T) {
		objs := mustHelmTemplate(t, "helm-single", "replicas: 1\nleaderElection: {enabled: false}\n")
		checkOperatorDeployment(t, find(t, objs, "Deployment", "valkey-operator"), "gomomento/valkey-operator:latest", 1)
		for _, o := range objs {
			if o.GetKind() == "Role" || o.GetKind() == "RoleBinding" {
				t.Errorf("%s rendered without leader election", describe(o))
			}
		}
	})
	t.Run("leader election in another namespace", func(t *testing.T) {
		objs := mustHelmTemplate(t, "helm-lease", "leaderElection: {namespace: leases}\n")
		role := find(t, objs, "Role", "valkey-operator-leader-election")
		dep := convert[appsv1.Deployment](t, find(t, objs, "Deployment", "valkey-operator"))
		if role.GetNamespace() != "leases" || !slices.Contains(dep.Spec.Template.Spec.Containers[0].Args, "--leader-election-namespace=leases") {
			t.Errorf("Role in %q, args %v", role.GetNamespace(), dep.Spec.Template.Spec.Containers[0].Args)
		}
	})
	t.Run("metrics off", func(t *testing.T) {
		objs := mustHelmTemplate(t, "helm-nometrics", "metrics: {enabled: false}\n")
		dep := convert[appsv1.Deployment](t, find(t, objs, "Deployment", "valkey-operator"))
		if !slices.Contains(dep.Spec.Template.Spec.Containers[0].Args, "--metrics-bind-address=0") {
			t.Errorf("args %v", dep.Spec.Template.Spec.Containers[0].Args)
		}
		for _, o := range objs {
			if o.GetKind() == "Service" {
				t.Errorf("%s rendered with metrics off", describe(o))
			}
		}
	})
	t.Run("service monitor", func(t *testing.T) {
		objs := mustHelmTemplate(t, "helm-monitor", "metrics: {serviceMonitor: {enabled: true, labels: {release: prometheus}}}\n")
		sm := find(t, objs, "ServiceMonitor", "valkey-operator")
		if sm.GetLabels()["release"] != "prometheus" {
			t.Errorf("ServiceMonitor labels %v", sm.GetLabels())
		}
		endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		if len(endpoints) != 1 || endpoints[0].(map[string]any)["port"] != "metrics" {
			t.Errorf("ServiceMonitor endpoints %v: want the Service's metrics port", endpoints)
		}
		checkSecureScrape(t, sm)
	})
	t.Run("plain HTTP metrics, asked for", func(t *testing.T) {
		objs := mustHelmTemplate(t, "helm-plain", "metrics: {secure: false, serviceMonitor: {enabled: true}}\n")
		dep := convert[appsv1.Deployment](t, find(t, objs, "Deployment", "valkey-operator"))
		if !slices.Contains(dep.Spec.Template.Spec.Containers[0].Args, "--metrics-secure=false") {
			t.Errorf("args %v lack --metrics-secure=false", dep.Spec.Template.Spec.Containers[0].Args)
		}
		endpoints, _, _ := unstructured.NestedSlice(find(t, objs, "ServiceMonitor", "valkey-operator").Object, "spec", "endpoints")
		if scheme := endpoints[0].(map[string]any)["scheme"]; scheme != nil {
			t.Errorf("ServiceMonitor scheme %v for plain HTTP", scheme)
		}
	})
	t.Run("pod monitor", func(t *testing.T) {
		objs := mustHelmTemplate(t, "valkey-operator", "metrics: {podMonitor: {enabled: true, labels: {release: prometheus}}}\n")
		got := find(t, objs, "PodMonitor", "valkey-exporter")
		if got.GetLabels()["release"] != "prometheus" {
			t.Errorf("PodMonitor labels %v", got.GetLabels())
		}
		want := find(t, kustomizeBuild(t, repoPath(t, "config", "prometheus")), "PodMonitor", "valkey-exporter")
		if !equality.Semantic.DeepEqual(got.Object["spec"], want.Object["spec"]) {
			t.Errorf("the chart's PodMonitor spec\n%v\ndiffers from config/prometheus'\n%v", got.Object["spec"], want.Object["spec"])
		}
	})
	t.Run("exporter image", func(t *testing.T) {
		objs := mustHelmTemplate(t, "helm-exporter", "exporterImage: registry.example/redis_exporter:v1.80.0\n")
		dep := convert[appsv1.Deployment](t, find(t, objs, "Deployment", "valkey-operator"))
		if !slices.Contains(dep.Spec.Template.Spec.Containers[0].Args, "--exporter-image=registry.example/redis_exporter:v1.80.0") {
			t.Errorf("args %v", dep.Spec.Template.Spec.Containers[0].Args)
		}
	})
	for name, values := range map[string]string{
		"two active operators": "leaderElection: {enabled: false}\n",
		"unknown zone spread":  "defaultZoneSpread: Required\n",
	} {
		t.Run("refuses "+name, func(t *testing.T) {
			if _, err := helmTemplate(t, "helm-bad", values); err == nil {
				t.Errorf("values %q rendered", values)
			}
		})
	}
}

// Helm installs crds/ as they are, and never upgrades them: they must be
// the generated ones.
func TestChartCRDsMatchConfig(t *testing.T) {
	want, err := filepath.Glob(repoPath(t, "config", "crd", "bases", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := filepath.Glob(repoPath(t, "charts", "valkey-operator", "crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	base := func(paths []string) []string {
		out := make([]string, len(paths))
		for i, p := range paths {
			out[i] = filepath.Base(p)
		}
		return out
	}
	if !slices.Equal(base(got), base(want)) {
		t.Fatalf("chart crds/ holds %v, config/crd/bases %v; run make chart-sync", base(got), base(want))
	}
	for i := range want {
		w, err := os.ReadFile(want[i])
		if err != nil {
			t.Fatal(err)
		}
		g, err := os.ReadFile(got[i])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(g, w) {
			t.Errorf("chart crds/%s differs from config/crd/bases; run make chart-sync", filepath.Base(got[i]))
		}
	}
}

func TestChartClusterRoleMatchesGenerated(t *testing.T) {
	data, err := os.ReadFile(repoPath(t, "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var generated rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict([]byte(strings.TrimPrefix(string(data), "---\n")), &generated); err != nil {
		t.Fatal(err)
	}
	chart := convert[rbacv1.ClusterRole](t, find(t, mustHelmTemplate(t, operatorNamespace, ""), "ClusterRole", "valkey-operator"))
	if !reflect.DeepEqual(chart.Rules, generated.Rules) {
		t.Fatalf("the chart's ClusterRole rules differ from config/rbac/role.yaml; run make chart-sync\nchart: %+v\ngenerated: %+v", chart.Rules, generated.Rules)
	}
}
