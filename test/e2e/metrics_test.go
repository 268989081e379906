package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/testcerts"
)

// recordScrapesEnv names a directory that receives the primary's and the
// replica's scrape once the test has checked them: the recorded scrapes
// the dashboard and alert tests (internal/manifests) check metric names
// against come from here.
const recordScrapesEnv = "VALKEY_E2E_RECORD_EXPORTER"

// A TLS cluster whose config enables the exporter runs redis_exporter next
// to every node, in a namespace enforcing Pod Security "restricted". It
// speaks TLS to its own node, verifying the certificate, as the
// least-privilege _momento_exporter, and serves real values: the cluster's
// state and slots, each node's role, maxmemory, replication, and a key
// count that follows the writes.
func TestExporterMetrics(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the exporter of a TLS cluster reaches its node by the pod's DNS name, which this runtime resolves only through /etc/hosts (root)")
	}
	const ns = "metrics"
	ctx := context.Background()
	cfg := createConfig(t, "monitored-"+ns, "8.0.1", valkeyv1.ValkeyConfigSpec{Valkey: map[string]string{"maxmemory": "64mb"},
		Exporter: &valkeyv1.Exporter{Enabled: ptr.To(true)}})
	ca := testcerts.NewCA("metrics-ca")
	f := newTLSCluster(t, ns, ca, 1, 1, withConfig(cfg), inRestrictedNamespace())
	got := f.cluster()
	primary, replica := got.Status.ShardStatuses[0].Primary, got.Status.ShardStatuses[0].Replicas[0]

	// The exporter's credential reaches it by reference only.
	for _, node := range []string{primary, replica} {
		var pod corev1.Pod
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: node}, &pod); err != nil {
			t.Fatal(err)
		}
		if len(pod.Spec.Containers) != 2 || pod.Spec.Containers[1].Name != render.ContainerExporter {
			t.Fatalf("pod %s runs %d containers, want Valkey and the exporter", node, len(pod.Spec.Containers))
		}
		for _, e := range pod.Spec.Containers[1].Env {
			if e.Value != "" && e.ValueFrom == nil && strings.Contains(strings.ToLower(e.Name), "password") {
				t.Fatalf("pod %s carries %s in its spec", node, e.Name)
			}
		}
	}

	// Both nodes reached over TLS (the nodes accept nothing else), the
	// cluster whole, each node in its role.
	scrapes := map[string]scrape{}
	eventually(t, 2*time.Minute, "both exporters scraping their node", func() error {
		for _, node := range []string{primary, replica} {
			s, err := scrapeExporter(ctx, ns, node)
			if err != nil {
				return err
			}
			for metric, want := range map[string]float64{
				"redis_up":                     1,
				"redis_cluster_state":          1,
				"redis_cluster_slots_assigned": 16384,
				"redis_cluster_known_nodes":    2,
				"redis_memory_max_bytes":       64 << 20,
			} {
				if v, ok := s.value(metric); !ok || v != want {
					return fmt.Errorf("node %s: %s = %v (present %v), want %v", node, metric, v, ok, want)
				}
			}
			scrapes[node] = s
		}
		if _, ok := scrapes[primary].value("redis_instance_info", `role="master"`); !ok {
			return fmt.Errorf("the primary %s is not reported as master", primary)
		}
		if v, ok := scrapes[primary].value("redis_connected_slaves"); !ok || v != 1 {
			return fmt.Errorf("the primary reports %v connected replicas", v)
		}
		if v, ok := scrapes[replica].value("redis_master_link_up"); !ok || v != 1 {
			return fmt.Errorf("the replica's master link: %v (present %v)", v, ok)
		}
		return nil
	})
	if v, ok := scrapes[primary].value("redis_db_keys"); ok && v != 0 {
		t.Fatalf("a new cluster holds %v keys", v)
	}

	// The key count follows real writes, on the primary and, replicated,
	// on the replica.
	c := clusterClient(t, f.service(), ca.CertPEM)
	data := writeKeys(t, c, "metrics", 300)
	checkKeys(t, c, data)
	eventually(t, time.Minute, "300 keys counted on both nodes", func() error {
		for _, node := range []string{primary, replica} {
			s, err := scrapeExporter(ctx, ns, node)
			if err != nil {
				return err
			}
			if v, ok := s.value("redis_db_keys", `db="db0"`); !ok || v != 300 {
				return fmt.Errorf("node %s counts %v keys (present %v)", node, v, ok)
			}
			scrapes[node] = s
		}
		return nil
	})
	if v, ok := scrapes[primary].value("redis_commands_total", `cmd="set"`); !ok || v < 300 {
		t.Fatalf("the primary counts %v SETs", v)
	}

	// The exporter is _momento_exporter: ACL LOG names it for the one
	// command of its scrape it is refused, SLOWLOG GET, whose entries hold
	// command arguments; it was never refused CONFIG GET, which it does not
	// send.
	for addr, n := range c.Nodes() {
		entries, err := n.Do(ctx, n.B().AclLog().Count(128).Build()).ToArray()
		if err != nil {
			t.Fatalf("ACL LOG on %s: %v", addr, err)
		}
		refused := map[string]bool{}
		for _, e := range entries {
			m, err := e.AsMap()
			if err != nil {
				t.Fatalf("ACL LOG entry on %s: %v", addr, err)
			}
			username, object := m["username"], m["object"]
			user, _ := username.ToString()
			obj, _ := object.ToString()
			if user != render.ExporterUser {
				t.Fatalf("ACL LOG on %s: %s refused %s", addr, user, obj)
			}
			refused[obj] = true
		}
		if !refused["slowlog|get"] || len(refused) != 1 {
			t.Fatalf("ACL LOG on %s: the exporter was refused %v, want slowlog|get only", addr, refused)
		}
	}

	if dir := os.Getenv(recordScrapesEnv); dir != "" {
		for file, node := range map[string]string{"exporter-primary.prom": primary, "exporter-replica.prom": replica} {
			if err := os.WriteFile(filepath.Join(dir, file), []byte(scrapes[node].raw), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Turning the exporter on for a running plaintext cluster replaces every
// node with one whose pod runs it, keeping the data, and adds the
// exporter's user; turning it off replaces them again and, once no pod
// runs an exporter, removes the user.
func TestExporterToggleRollsNodes(t *testing.T) {
	t.Parallel()
	const ns = "metrics-toggle"
	ctx := context.Background()
	key := newPlainCluster(t, ns, "cache", 1, 1)
	c := clusterClient(t, seedOf(key), nil)
	data := writeKeys(t, c, "toggle", 200)

	for _, enabled := range []bool{true, false} {
		old := getCluster(t, key).Status.Nodes
		var cfg valkeyv1.ValkeyConfig
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: "standard-" + ns}, &cfg); err != nil {
			t.Fatal(err)
		}
		cfg.Spec.Exporter = &valkeyv1.Exporter{Enabled: ptr.To(enabled)}
		if err := k8sClient.Update(ctx, &cfg); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		eventually(t, 5*time.Minute, fmt.Sprintf("every node replaced with exporter %v", enabled), func() error {
			for _, n := range getCluster(t, key).Status.Nodes {
				if slices.Contains(old, n) {
					return fmt.Errorf("%s not replaced yet", n)
				}
			}
			return nil
		})
		vc := waitConverged(t, key, 1, 1, 5*time.Minute)
		t.Logf("exporter %v: every node replaced in %s", enabled, time.Since(start).Round(time.Second))
		checkKeys(t, c, data)

		for _, node := range vc.Status.Nodes {
			var pod corev1.Pod
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: node}, &pod); err != nil {
				t.Fatal(err)
			}
			if runs := len(pod.Spec.Containers) == 2; runs != enabled {
				t.Fatalf("exporter %v, but pod %s runs %d containers", enabled, node, len(pod.Spec.Containers))
			}
		}
		eventually(t, time.Minute, fmt.Sprintf("the exporter's user present: %v", enabled), func() error {
			// A node the roll replaced no longer answers; the client may
			// still list it, and retries it forever without a deadline.
			answered := 0
			for addr, n := range c.Nodes() {
				ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				users, err := n.Do(ctx, n.B().AclUsers().Build()).AsStrSlice()
				cancel()
				if err != nil {
					continue
				}
				answered++
				if slices.Contains(users, render.ExporterUser) != enabled {
					return fmt.Errorf("%s has users %q", addr, users)
				}
			}
			if answered == 0 {
				return fmt.Errorf("no node answered ACL USERS")
			}
			return nil
		})
		if enabled {
			eventually(t, time.Minute, "every exporter counting the keys", func() error {
				for _, node := range vc.Status.Nodes {
					s, err := scrapeExporter(ctx, ns, node)
					if err != nil {
						return err
					}
					if v, ok := s.value("redis_db_keys", `db="db0"`); !ok || v != float64(len(data)) {
						return fmt.Errorf("node %s: %v keys (present %v), redis_up %v", node, v, ok, s.samples["redis_up"])
					}
				}
				return nil
			})
		}
	}
}

// scrape is one /metrics page: its text and its samples by series
// ("name{labels}" as exposed).
type scrape struct {
	raw     string
	samples map[string]float64
}

// value is the first sample of the metric called name whose labels include
// every one of labels (each written name="value").
func (s scrape) value(name string, labels ...string) (float64, bool) {
	for series, v := range s.samples {
		n, rest, _ := strings.Cut(series, "{")
		if n != name {
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

// scrapeExporter reads the exporter's /metrics from the node's pod address,
// as Prometheus does.
func scrapeExporter(ctx context.Context, ns, node string) (scrape, error) {
	var pod corev1.Pod
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: node}, &pod); err != nil {
		return scrape{}, err
	}
	if pod.Status.PodIP == "" {
		return scrape{}, fmt.Errorf("pod %s has no address yet", node)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: local.Runtime.DialContext}}
	url := "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(render.PortExporter))) + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return scrape{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return scrape{}, fmt.Errorf("scraping %s: %w", node, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return scrape{}, fmt.Errorf("scraping %s: %s, %v", node, resp.Status, err)
	}
	s := scrape{raw: string(body), samples: map[string]float64{}}
	sc := bufio.NewScanner(strings.NewReader(s.raw))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			return scrape{}, fmt.Errorf("scrape of %s: line %q", node, line)
		}
		s.samples[line[:i]] = v
	}
	return s, sc.Err()
}
