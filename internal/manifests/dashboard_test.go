package manifests

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

type grafanaTarget struct {
	RefID string `json:"refId"`
	Expr  string `json:"expr"`
}

type grafanaPanel struct {
	ID      int                      `json:"id"`
	Type    string                   `json:"type"`
	Title   string                   `json:"title"`
	GridPos struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []grafanaTarget          `json:"targets"`
	Panels  []grafanaPanel           `json:"panels"`
}

type grafanaDashboard struct {
	UID        string         `json:"uid"`
	Title      string         `json:"title"`
	Panels     []grafanaPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// labelValues is Grafana's variable query label_values(selector, label).
var labelValues = regexp.MustCompile(`^label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)

// The dashboard parses, every query in it (panels and variables) is valid
// PromQL reading only what the operator and the exporter expose, and it
// covers what operating a cluster needs.
func TestGrafanaDashboard(t *testing.T) {
	data, err := os.ReadFile(repoPath(t, "config", "grafana", "valkey-clusters.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("the dashboard is not valid JSON: %v", err)
	}
	if d.UID == "" || d.Title == "" {
		t.Fatalf("uid %q, title %q", d.UID, d.Title)
	}
	cat := newCatalogue(t)

	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: %v", v.Name, err)
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(selector, label)", v.Name, q.Query)
			continue
		}
		for _, err := range cat.check(m[1]) {
			t.Errorf("variable %s: %v", v.Name, err)
		}
	}
	for _, want := range []string{"datasource", "namespace", "cluster", "pod"} {
		if !vars[want] {
			t.Errorf("no variable %s", want)
		}
	}

	ids := map[int]string{}
	used := map[string]bool{}
	var walk func(ps []grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			if other, dup := ids[p.ID]; dup {
				t.Errorf("panels %q and %q share id %d", other, p.Title, p.ID)
			}
			ids[p.ID] = p.Title
			if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X < 0 || p.GridPos.X+p.GridPos.W > 24 {
				t.Errorf("panel %q: gridPos %+v outside the 24 columns", p.Title, p.GridPos)
			}
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q queries nothing", p.Title)
			}
			for _, tg := range p.Targets {
				for _, err := range cat.check(tg.Expr) {
					t.Errorf("panel %q, query %s: %v", p.Title, tg.RefID, err)
				}
				sels, _ := parsePromQL(tg.Expr)
				for _, s := range sels {
					used[s.metric] = true
				}
				for _, v := range regexp.MustCompile(`\$\{?([a-zA-Z_]+)`).FindAllStringSubmatch(tg.Expr, -1) {
					if !vars[v[1]] && !strings.HasPrefix(v[1], "__") {
						t.Errorf("panel %q uses $%s, which is not a variable", p.Title, v[1])
					}
				}
			}
		}
	}
	walk(d.Panels)

	for topic, metric := range map[string]string{
		"cluster state (operator)":   "valkey_cluster_state",
		"cluster state (Valkey)":     "redis_cluster_state",
		"slots":                      "valkey_cluster_slots_assigned",
		"memory":                     "redis_memory_used_bytes",
		"maxmemory":                  "redis_memory_max_bytes",
		"ops/s":                      "redis_commands_processed_total",
		"latency":                    "redis_latency_percentiles_usec",
		"replication lag":            "redis_connected_slave_lag_seconds",
		"replication link":           "redis_master_link_up",
		"evictions":                  "redis_evicted_keys_total",
		"TLS rotations":              "valkey_tls_reloads_total",
		"certificate expiry":         "valkey_cluster_tls_certificate_not_after_seconds",
		"autoscaling decisions":      "valkey_cluster_autoscaling_decisions_total",
		"autoscaling desired shards": "valkey_cluster_autoscaling_desired_shards",
	} {
		if !used[metric] {
			t.Errorf("no panel shows %s (%s)", topic, metric)
		}
	}
}

// config/grafana ships the same JSON as a ConfigMap for Grafana's sidecar.
func TestGrafanaDashboardConfigMap(t *testing.T) {
	cm := find(t, kustomizeBuild(t, repoPath(t, "config", "grafana")), "ConfigMap", "valkey-grafana-dashboard")
	if cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("labels %v: the sidecar looks for grafana_dashboard", cm.GetLabels())
	}
	file, err := os.ReadFile(repoPath(t, "config", "grafana", "valkey-clusters.json"))
	if err != nil {
		t.Fatal(err)
	}
	data, _, _ := unstructured.NestedString(cm.Object, "data", "valkey-clusters.json")
	if data != string(file) {
		t.Error("the ConfigMap does not carry valkey-clusters.json verbatim")
	}
}
