package manifests

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller"
	"github.com/gomomento/valkey-operator/internal/render"
)

// catalogue is what dashboards and alert rules may query: the operator's
// registered metrics, the exporter's as recorded from the real one
// (testdata, written by the end-to-end test TestExporterMetrics with
// VALKEY_E2E_RECORD_EXPORTER=internal/manifests/testdata), and Prometheus'
// own up.
type catalogue struct {
	operator map[string][]string
	exporter exposition
	// targetLabels are the labels Prometheus adds to every exporter series.
	targetLabels []string
}

func newCatalogue(t *testing.T) catalogue {
	t.Helper()
	c := catalogue{
		operator: controller.MetricLabels(),
		exporter: readExposition(t, repoPath(t, "internal", "manifests", "testdata", "exporter-primary.prom"),
			repoPath(t, "internal", "manifests", "testdata", "exporter-replica.prom")),
		// What the Prometheus Operator sets for a PodMonitor target.
		targetLabels: []string{"namespace", "pod", "container", "endpoint", "job", "instance"},
	}
	pm := find(t, kustomizeBuild(t, repoPath(t, "config", "prometheus")), "PodMonitor", "valkey-exporter")
	endpoints, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	for _, e := range endpoints {
		relabelings, _, _ := unstructured.NestedSlice(e.(map[string]any), "relabelings")
		for _, r := range relabelings {
			if l, ok := r.(map[string]any)["targetLabel"].(string); ok {
				c.targetLabels = append(c.targetLabels, l)
			}
		}
	}
	if len(c.operator) == 0 || len(c.exporter) == 0 {
		t.Fatalf("empty catalogue: %d operator metrics, %d exporter metrics", len(c.operator), len(c.exporter))
	}
	return c
}

// check parses expr and returns what is wrong with the metrics it reads: a
// name nobody exposes, a label the metric does not have, or a literal
// value no recorded series has (quantile="0.99" where the exporter writes
// "99").
func (c catalogue) check(expr string) []error {
	sels, err := parsePromQL(expr)
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, s := range sels {
		opLabels, isOperator := c.operator[s.metric]
		switch {
		case s.metric == "up":
		case isOperator:
			for _, m := range s.matchers {
				if !slices.Contains(opLabels, m.label) {
					errs = append(errs, fmt.Errorf("%s has no label %s (it has %q)", s.metric, m.label, opLabels))
				}
			}
		case c.exporter[s.metric] != nil:
			for _, m := range s.matchers {
				if slices.Contains(c.targetLabels, m.label) {
					continue
				}
				values, ok := c.exporter[s.metric][m.label]
				switch {
				case !ok:
					errs = append(errs, fmt.Errorf("%s has no label %s in the recorded scrapes", s.metric, m.label))
				case m.op == "=" && !strings.Contains(m.value, "$") && !values[m.value]:
					errs = append(errs, fmt.Errorf("no recorded %s has %s=%q", s.metric, m.label, m.value))
				}
			}
		default:
			errs = append(errs, fmt.Errorf("%s is neither an operator metric nor in the recorded exporter scrapes", s.metric))
		}
	}
	return errs
}

type promRule struct {
	Alert  string            `json:"alert"`
	Expr   string            `json:"expr"`
	For    string            `json:"for"`
	Labels map[string]string `json:"labels"`
}

func TestPrometheusRulesUseExportedMetrics(t *testing.T) {
	data, err := os.ReadFile(repoPath(t, "config", "prometheus", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []promRule `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &rule); err != nil {
		t.Fatal(err)
	}
	cat := newCatalogue(t)
	var alerts []string
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			for _, err := range cat.check(r.Expr) {
				t.Errorf("alert %s: %v", r.Alert, err)
			}
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("alert %s: for %q: %v", r.Alert, r.For, err)
				}
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("alert %s: severity %q", r.Alert, s)
			}
		}
	}
	for _, want := range []string{"ValkeyClusterCertificateExpiringSoon", "ValkeyClusterNotActive", "ValkeyClusterDegraded", "ValkeyClusterSlotsUnassigned", "ValkeyOperatorDown",
		"ValkeyMemoryNearMaxmemory", "ValkeyReplicationBroken", "ValkeyClusterStateFail", "ValkeyExporterDown"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("no alert %s among %v", want, alerts)
		}
	}
}

// The ServiceMonitor finds the metrics Service config/default installs, and
// the job label the operator-down alert matches is that Service's name.
func TestServiceMonitorSelectsMetricsService(t *testing.T) {
	objs := kustomizeBuild(t, repoPath(t, "config", "prometheus"))
	sm := find(t, objs, "ServiceMonitor", "valkey-operator")
	svc := convert[corev1.Service](t, find(t, kustomizeBuild(t, repoPath(t, "config", "default")), "Service", "valkey-operator-metrics"))

	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for k, v := range sel {
		if svc.Labels[k] != v {
			t.Errorf("ServiceMonitor selects %v; the Service has labels %v", sel, svc.Labels)
		}
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 || endpoints[0].(map[string]any)["port"] != svc.Spec.Ports[0].Name {
		t.Errorf("ServiceMonitor endpoints %v, Service ports %+v", endpoints, svc.Spec.Ports)
	}
	checkSecureScrape(t, sm)
	rules, err := os.ReadFile(repoPath(t, "config", "prometheus", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rules), `job="`+svc.Name+`"`) {
		t.Errorf("the operator-down alert does not match job %q", svc.Name)
	}
}

// The PodMonitor finds the exporter on the pods the operator renders: their
// labels, the exporter's port by name, and the pod labels it copies into
// cluster and shard; the exporter-down alert matches its job.
func TestPodMonitorSelectsExporters(t *testing.T) {
	pm := find(t, kustomizeBuild(t, repoPath(t, "config", "prometheus")), "PodMonitor", "valkey-exporter")
	podLabels := render.PodLabels("my-cluster", 2)
	sel, _, _ := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
	if len(sel) == 0 {
		t.Fatal("the PodMonitor selects every pod")
	}
	for k, v := range sel {
		if podLabels[k] != v {
			t.Errorf("PodMonitor selects %v; Valkey pods have labels %v", sel, podLabels)
		}
	}
	if any, _, _ := unstructured.NestedBool(pm.Object, "spec", "namespaceSelector", "any"); !any {
		t.Error("the PodMonitor does not look in every namespace")
	}
	endpoints, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	if len(endpoints) != 1 {
		t.Fatalf("endpoints %v", endpoints)
	}
	ep := endpoints[0].(map[string]any)
	if ep["port"] != render.PortNameExporter {
		t.Errorf("PodMonitor scrapes port %v, the exporter's is %q", ep["port"], render.PortNameExporter)
	}
	// Prometheus exposes pod label a.b/c-d as __meta_kubernetes_pod_label_a_b_c_d.
	meta := func(label string) string {
		return "__meta_kubernetes_pod_label_" + strings.NewReplacer(".", "_", "/", "_", "-", "_").Replace(label)
	}
	want := map[string]string{"cluster": meta(valkeyv1.LabelInstance), "shard": meta(valkeyv1.LabelShardIndex)}
	relabelings, _, _ := unstructured.NestedSlice(ep, "relabelings")
	got := map[string]string{}
	for _, r := range relabelings {
		m := r.(map[string]any)
		src, _ := m["sourceLabels"].([]any)
		if len(src) == 1 {
			got[fmt.Sprint(m["targetLabel"])] = fmt.Sprint(src[0])
		}
	}
	for target, source := range want {
		if got[target] != source {
			t.Errorf("relabeling to %s reads %q, want %q", target, got[target], source)
		}
	}
	rules, err := os.ReadFile(repoPath(t, "config", "prometheus", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if job := pm.GetNamespace() + "/" + pm.GetName(); !strings.Contains(string(rules), `job="`+job+`"`) {
		t.Errorf("the exporter-down alert does not match job %q", job)
	}
}

// checkSecureScrape: the operator serves /metrics over HTTPS to callers
// with a token the apiserver authorizes, so a ServiceMonitor must scrape
// that way.
func checkSecureScrape(t *testing.T, sm *unstructured.Unstructured) {
	t.Helper()
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	for _, e := range endpoints {
		ep := e.(map[string]any)
		if ep["scheme"] != "https" || ep["bearerTokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" {
			t.Errorf("ServiceMonitor endpoint %v: want scheme https with the scraper's token", ep)
		}
	}
}
