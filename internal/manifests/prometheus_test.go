package manifests

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// exportedMetrics are the metric names the operator registers, read from
// its source so that a renamed metric fails here instead of silencing an
// alert.
func exportedMetrics(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(repoPath(t, "internal", "controller", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`Name:\s+"(valkey_[a-z_]+)"`)
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(data), -1) {
			out = append(out, m[1])
		}
	}
	if len(out) == 0 {
		t.Fatal("found no metric in internal/controller")
	}
	return out
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
	metrics := exportedMetrics(t)
	name := regexp.MustCompile(`\bvalkey_[a-z_]+\b`)
	var alerts []string
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			for _, m := range name.FindAllString(r.Expr, -1) {
				if !slices.Contains(metrics, m) {
					t.Errorf("alert %s uses %s, which the operator does not export (it exports %v)", r.Alert, m, metrics)
				}
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
	for _, want := range []string{"ValkeyClusterCertificateExpiringSoon", "ValkeyClusterNotActive", "ValkeyClusterDegraded", "ValkeyClusterSlotsUnassigned", "ValkeyOperatorDown"} {
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
	rules, err := os.ReadFile(repoPath(t, "config", "prometheus", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rules), `job="`+svc.Name+`"`) {
		t.Errorf("the operator-down alert does not match job %q", svc.Name)
	}
}
