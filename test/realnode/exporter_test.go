package realnode

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gomomento/valkey-operator/internal/testbin"
)

// TestExporterScraped runs a 1x1 cluster with the exporter and scrapes it
// the way the shipped PodMonitor (config/prometheus/podmonitor.yaml)
// tells Prometheus to: the pods its selector matches, the container port
// it names, its path, at each pod's IP. Each node's exporter answers with
// Valkey's real values: up, the cluster whole, each node in its role, and
// a key count that follows the writes on the primary and, replicated, on
// the replica.
func TestExporterScraped(t *testing.T) {
	ns := "exporter"
	createNamespace(t, ns)
	key := createCluster(t, ns, "cache", createMenu(t, "exporter", true), 1, 1)
	vc := waitConverged(t, key, 1, 1, 5*time.Minute)
	primary, replica := vc.Status.ShardStatuses[0].Primary, vc.Status.ShardStatuses[0].Replicas[0]
	pm := shippedPodMonitor(t)

	var pods corev1.PodList
	if err := k8sClient.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels(pm.Spec.Selector.MatchLabels)); err != nil {
		t.Fatal(err)
	}
	targets := map[string]string{}
	for _, p := range pods.Items {
		// The labels the PodMonitor relabels into cluster and shard.
		for _, r := range pm.Spec.Endpoints[0].Relabelings {
			for _, src := range r.SourceLabels {
				if !hasDiscoveredLabel(&p, src) {
					t.Errorf("pod %s has no label Prometheus discovers as %s, which the PodMonitor turns into %s", p.Name, src, r.TargetLabel)
				}
			}
		}
		for _, c := range p.Spec.Containers {
			for _, port := range c.Ports {
				if port.Name == pm.Spec.Endpoints[0].Port {
					targets[p.Name] = "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(port.ContainerPort))) + pm.Spec.Endpoints[0].Path
				}
			}
		}
	}
	if len(targets) != 2 || targets[primary] == "" || targets[replica] == "" {
		t.Fatalf("the PodMonitor finds targets %v, want the primary %s and the replica %s", targets, primary, replica)
	}
	t.Logf("targets: %v", targets)

	scrapeBoth := func(check func(node string, s samples) error) {
		t.Helper()
		eventually(t, time.Minute, "both exporters' metrics", func() error {
			for _, node := range []string{primary, replica} {
				s, err := scrapeMetrics(targets[node])
				if err != nil {
					return fmt.Errorf("%s: %w", node, err)
				}
				if err := check(node, s); err != nil {
					return fmt.Errorf("%s: %w", node, err)
				}
			}
			return nil
		})
	}
	scrapeBoth(func(node string, s samples) error {
		want := map[string]float64{
			"redis_up":                     1,
			"redis_cluster_state":          1,
			"redis_cluster_slots_assigned": 16384,
			"redis_cluster_known_nodes":    2,
			"redis_memory_max_bytes":       64 << 20,
		}
		role, link := `role="slave"`, "redis_master_link_up"
		if node == primary {
			role, link = `role="master"`, "redis_connected_slaves"
		}
		want[link] = 1
		for metric, v := range want {
			if got, ok := s.value(metric); !ok || got != v {
				return fmt.Errorf("%s = %v (present %v), want %v", metric, got, ok, v)
			}
		}
		if _, ok := s.value("redis_instance_info", role); !ok {
			return fmt.Errorf("no redis_instance_info with %s", role)
		}
		return nil
	})

	c := clusterClient(t, clusterPods(t, key)[0].Status.PodIP)
	checkAll(t, c, writeKeys(t, c, "scraped", 300))
	scrapeBoth(func(_ string, s samples) error {
		if v, ok := s.value("redis_db_keys", `db="db0"`); !ok || v != 300 {
			return fmt.Errorf("redis_db_keys{db=\"db0\"} = %v (present %v), want 300", v, ok)
		}
		return nil
	})
}

// podMonitor is what the test reads of a PodMonitor.
type podMonitor struct {
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints []struct {
			Port        string `json:"port"`
			Path        string `json:"path"`
			Relabelings []struct {
				SourceLabels []string `json:"sourceLabels"`
				TargetLabel  string   `json:"targetLabel"`
			} `json:"relabelings"`
		} `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

func shippedPodMonitor(t testing.TB) podMonitor {
	t.Helper()
	root, err := testbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "config", "prometheus", "podmonitor.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pm podMonitor
	if err := yaml.Unmarshal(b, &pm); err != nil {
		t.Fatalf("the shipped PodMonitor: %v", err)
	}
	if len(pm.Spec.Selector.MatchLabels) == 0 || len(pm.Spec.Endpoints) != 1 || pm.Spec.Endpoints[0].Port == "" || pm.Spec.Endpoints[0].Path == "" {
		t.Fatalf("the shipped PodMonitor selects %v at %+v, want one endpoint with a port and a path", pm.Spec.Selector.MatchLabels, pm.Spec.Endpoints)
	}
	return pm
}

// hasDiscoveredLabel says whether p has a non-empty label that Prometheus'
// Kubernetes discovery names meta: __meta_kubernetes_pod_label_ and the
// label's name with each character outside [a-zA-Z0-9_] made _. Other
// discovery labels are not the pod's to have.
func hasDiscoveredLabel(p *corev1.Pod, meta string) bool {
	want, ok := strings.CutPrefix(meta, "__meta_kubernetes_pod_label_")
	if !ok {
		return true
	}
	for l, v := range p.Labels {
		name := strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
				return r
			}
			return '_'
		}, l)
		if name == want && v != "" {
			return true
		}
	}
	return false
}

// samples are a scrape's series, keyed by name and labels as written.
type samples map[string]float64

// value is the first series named metric whose labels contain every one
// of labels.
func (s samples) value(metric string, labels ...string) (float64, bool) {
	for series, v := range s {
		name, rest, _ := strings.Cut(series, "{")
		if name != metric {
			continue
		}
		all := true
		for _, l := range labels {
			all = all && strings.Contains(rest, l)
		}
		if all {
			return v, true
		}
	}
	return 0, false
}

// scrapeMetrics gets url and parses Prometheus' text format.
func scrapeMetrics(url string) (samples, error) {
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s, %v", url, resp.Status, err)
	}
	s := samples{}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("GET %s: line %q", url, line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("GET %s: line %q: %w", url, line, err)
		}
		s[line[:i]] = v
	}
	return s, sc.Err()
}
