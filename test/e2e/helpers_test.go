package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/testenv"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
	"github.com/gomomento/valkey-operator/internal/topology"
	vk "github.com/gomomento/valkey-operator/internal/valkey"
)

func createNamespace(t testing.TB, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8sClient.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	logNamespaceOnFailure(t, name)
}

// createMenu creates an image and a config for Valkey 8 named after suffix.
func createMenu(t testing.TB, suffix string) string {
	t.Helper()
	return createConfig(t, menuConfigName(suffix), "8.0.1", valkeyv1.ValkeyConfigSpec{Valkey: map[string]string{"maxmemory": "64mb"}})
}

// menuConfigName and menuImageName name what createMenu creates for suffix.
func menuConfigName(suffix string) string { return "standard-" + suffix }
func menuImageName(suffix string) string  { return imageNameOf(menuConfigName(suffix)) }

// imageNameOf is the ValkeyImage createConfig makes for config name.
func imageNameOf(config string) string { return "valkey-" + config }

// createConfig creates a ValkeyConfig named name with spec, on a ValkeyImage
// of its own for Valkey version, and returns the config's name.
func createConfig(t testing.TB, name, version string, spec valkeyv1.ValkeyConfigSpec) string {
	t.Helper()
	img := &valkeyv1.ValkeyImage{ObjectMeta: metav1.ObjectMeta{Name: imageNameOf(name)},
		Spec: valkeyv1.ValkeyImageSpec{Repository: "valkey/valkey", Tag: version, Version: version}}
	spec.ImageRef = img.Name
	cfg := &valkeyv1.ValkeyConfig{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	for _, o := range []client.Object{img, cfg} {
		if err := k8sClient.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
	return cfg.Name
}

func getCluster(t testing.TB, key client.ObjectKey) *valkeyv1.ValkeyCluster {
	t.Helper()
	var vc valkeyv1.ValkeyCluster
	if err := k8sClient.Get(context.Background(), key, &vc); err != nil {
		t.Fatalf("get cluster %s: %v", key, err)
	}
	return &vc
}

// waitActive waits until the cluster is Active with every slot assigned and
// exactly the expected members.
func waitActive(t testing.TB, key client.ObjectKey, shards, replicas int, timeout time.Duration) *valkeyv1.ValkeyCluster {
	t.Helper()
	var vc *valkeyv1.ValkeyCluster
	eventually(t, timeout, fmt.Sprintf("%s Active with %dx%d", key, shards, replicas), func() error {
		vc = getCluster(t, key)
		s := vc.Status
		if s.State != valkeyv1.StateActive {
			return fmt.Errorf("state %q (%s); conditions %v", s.State, s.Message, conditionSummary(vc))
		}
		if s.SlotsAssigned != topology.TotalSlots {
			return fmt.Errorf("%d slots assigned", s.SlotsAssigned)
		}
		if int(s.Shards) != shards || len(s.Nodes) != shards*(1+replicas) {
			return fmt.Errorf("%d shards, %d nodes", s.Shards, len(s.Nodes))
		}
		return nil
	})
	for _, sh := range vc.Status.ShardStatuses {
		if len(sh.Replicas) != replicas {
			t.Fatalf("shard %d has %d replicas, want %d", sh.Index, len(sh.Replicas), replicas)
		}
	}
	return vc
}

func conditionSummary(vc *valkeyv1.ValkeyCluster) []string {
	var out []string
	for _, c := range vc.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return out
}

// clusterClient is a cluster-aware client. With caPEM set it speaks TLS and
// verifies every node against the CA with the name it was redirected to.
func clusterClient(t testing.TB, seed string, caPEM []byte) valkey.Client {
	t.Helper()
	// The runtime learns a new Service's name from its watch, which may
	// still be re-establishing itself after a control-plane restart.
	host, _, err := net.SplitHostPort(seed)
	if err != nil {
		host = seed
	}
	eventually(t, time.Minute, "resolving "+host, func() error {
		_, err := local.Runtime.LookupHostContext(context.Background(), host)
		return err
	})
	c, err := newClusterClient(seed, caPEM)
	if err != nil {
		t.Fatalf("connecting a cluster client to %s: %v", seed, err)
	}
	t.Cleanup(c.Close)
	return c
}

func newClusterClient(seed string, caPEM []byte) (valkey.Client, error) {
	opt := valkey.ClientOption{
		InitAddress:  []string{seed},
		DisableCache: true,
		DialCtxFn: func(ctx context.Context, dst string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
			conn, err := local.Runtime.DialContext(ctx, "tcp", dst)
			if err != nil || caPEM == nil {
				return conn, err
			}
			host, _, _ := net.SplitHostPort(dst)
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(caPEM)
			tc := tls.Client(conn, &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12})
			if err := tc.HandshakeContext(ctx); err != nil {
				conn.Close()
				return nil, err
			}
			return tc, nil
		},
	}
	if caPEM != nil {
		// valkey-go picks the nodes' TLS ports from the topology only when it
		// is told the connections are TLS; DialCtxFn does the handshake.
		opt.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return valkey.NewClient(opt)
}

// assertKeysOnEveryShard checks that writes reached every shard: each node
// the client routes to (every primary, at least) holds some keys.
func assertKeysOnEveryShard(t testing.TB, c valkey.Client, shards int) {
	t.Helper()
	eventually(t, 30*time.Second, "keys on every node", func() error {
		// The client may still hold connections to nodes a scale-in
		// removed; those no longer answer, and without a deadline its
		// retries of a read-only command never end.
		answering := 0
		for addr, n := range c.Nodes() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			size, err := n.Do(ctx, n.B().Dbsize().Build()).AsInt64()
			cancel()
			if err != nil {
				continue
			}
			answering++
			if size == 0 {
				return fmt.Errorf("node %s holds no key", addr)
			}
		}
		if answering < shards {
			return fmt.Errorf("%d nodes answer, want at least %d", answering, shards)
		}
		return nil
	})
}

// assertHostnamesAnnounced checks that the topology and MOVED redirects name
// nodes by their per-pod DNS names, which the certificate's wildcard covers.
func assertHostnamesAnnounced(t testing.TB, c valkey.Client, suffix string) {
	t.Helper()
	ctx := context.Background()
	reply, err := c.Do(ctx, c.B().ClusterShards().Build()).ToAny()
	if err != nil {
		t.Fatalf("CLUSTER SHARDS: %v", err)
	}
	shards, err := vk.ParseClusterShards(reply)
	if err != nil {
		t.Fatalf("parsing CLUSTER SHARDS: %v", err)
	}
	for _, sh := range shards {
		for _, n := range sh.Nodes {
			if !strings.HasSuffix(n.Hostname, "."+suffix) {
				t.Fatalf("CLUSTER SHARDS names node %s by %q, want a per-pod name under %s", n.ID, n.Hostname, suffix)
			}
		}
	}
	for addr, n := range c.Nodes() {
		for i := range 100 {
			err := n.Do(ctx, n.B().Get().Key(fmt.Sprintf("probe-%d", i)).Build()).Error()
			if ret, ok := valkey.IsValkeyErr(err); ok {
				if moved, ok := ret.IsMoved(); ok {
					host, _, _ := net.SplitHostPort(moved)
					if !strings.HasSuffix(host, "."+suffix) {
						t.Fatalf("MOVED from %s points at %q, want a per-pod name under %s", addr, moved, suffix)
					}
					return
				}
			}
		}
	}
	t.Fatalf("no node answered MOVED for 100 keys")
}

// writeKeys writes n keys and returns them with their values.
func writeKeys(t testing.TB, c valkey.Client, prefix string, n int) map[string]string {
	t.Helper()
	ctx := context.Background()
	want := make(map[string]string, n)
	for i := range n {
		k, v := fmt.Sprintf("%s:%d", prefix, i), fmt.Sprintf("value-%d", i)
		if err := c.Do(ctx, c.B().Set().Key(k).Value(v).Build()).Error(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
		want[k] = v
	}
	return want
}

func checkKeys(t testing.TB, c valkey.Client, want map[string]string) {
	t.Helper()
	ctx := context.Background()
	for k, v := range want {
		got, err := c.Do(ctx, c.B().Get().Key(k).Build()).ToString()
		if err != nil || got != v {
			t.Fatalf("GET %s = %q, %v; want %q", k, got, err, v)
		}
	}
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// waitReplicated waits until every replica has acknowledged everything its
// primary had produced when the call began. Replication is asynchronous:
// only writes a replica holds survive the loss of their primary, so a test
// that kills a primary right after writing must first wait for this.
func waitReplicated(t testing.TB, c valkey.Client) {
	t.Helper()
	ctx := context.Background()
	want := map[string]int64{}
	eventually(t, time.Minute, "every replica caught up", func() error {
		for addr, n := range c.Nodes() {
			ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			text, err := n.Do(ctx, n.B().Info().Section("replication").Build()).ToString()
			cancel()
			if err != nil {
				return fmt.Errorf("INFO on %s: %w", addr, err)
			}
			r, err := vk.ParseReplicationInfo(text)
			if err != nil || !r.IsPrimary() {
				continue
			}
			if _, ok := want[addr]; !ok {
				want[addr] = r.ReplicationOffset
			}
			for _, rep := range r.Replicas {
				if rep.Offset < want[addr] {
					return fmt.Errorf("replica %s:%d of %s at offset %d, want %d", rep.IP, rep.Port, addr, rep.Offset, want[addr])
				}
			}
		}
		return nil
	})
}

// countLost counts the keys of want that are missing or hold another value.
func countLost(c valkey.Client, want map[string]string) int {
	lost := 0
	for k, v := range want {
		got, err := c.Do(context.Background(), c.B().Get().Key(k).Build()).ToString()
		if err != nil || got != v {
			lost++
		}
	}
	return lost
}

// checkAll reads every key back, retrying briefly so a client that has not
// yet learned the final topology is not mistaken for lost data, and reports
// every key that is missing or wrong.
func checkAll(t testing.TB, c valkey.Client, want map[string]string) {
	t.Helper()
	ctx := context.Background()
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var bad []string
	eventually(t, time.Minute, fmt.Sprintf("%d keys readable", len(keys)), func() error {
		bad = bad[:0]
		for _, k := range keys {
			got, err := c.Do(ctx, c.B().Get().Key(k).Build()).ToString()
			if err != nil && !valkey.IsValkeyNil(err) {
				return fmt.Errorf("GET %s: %w", k, err)
			}
			if got != want[k] {
				bad = append(bad, k)
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("%d of %d keys missing or wrong, e.g. %v", len(bad), len(keys), bad[:min(5, len(bad))])
		}
		return nil
	})
}

// lostOf reads every key of want back once and returns those that do not
// hold their value, sorted.
func lostOf(t testing.TB, c valkey.Client, want map[string]string) []string {
	t.Helper()
	var lost []string
	for k, v := range want {
		got, err := c.Do(context.Background(), c.B().Get().Key(k).Build()).ToString()
		if err != nil && !valkey.IsValkeyNil(err) {
			t.Fatalf("GET %s: %v", k, err)
		}
		if got != v {
			lost = append(lost, k)
		}
	}
	sort.Strings(lost)
	return lost
}

// assertEvenSlots checks from the nodes themselves that the primaries
// serve all 16384 slots between them, each within one batch of the others.
func assertEvenSlots(t testing.TB, ns string, vc *valkeyv1.ValkeyCluster, shards int) {
	t.Helper()
	counts := map[string]int{}
	eventually(t, time.Minute, "every node agreeing on an even slot map", func() error {
		clear(counts)
		var first string
		for _, name := range vc.Status.Nodes {
			n, err := dialPod(ns, name)
			if err != nil {
				return err
			}
			nodes, err := n.ClusterNodes(context.Background())
			n.Close()
			if err != nil {
				return err
			}
			view := map[string]int{}
			for _, cn := range nodes {
				if cn.IsPrimary() && cn.SlotCount() > 0 && !cn.Failing() {
					view[cn.ID] = cn.SlotCount()
				}
			}
			if s := fmt.Sprint(view); first == "" {
				first = s
				for k, v := range view {
					counts[k] = v
				}
			} else if s != first {
				return fmt.Errorf("node %s sees %s, another node %s", name, s, first)
			}
		}
		return nil
	})
	total, lo, hi := 0, topology.TotalSlots, 0
	for _, c := range counts {
		total += c
		lo, hi = min(lo, c), max(hi, c)
	}
	if len(counts) != shards || total != topology.TotalSlots || hi-lo > topology.DefaultBatchSize {
		t.Fatalf("slot map %v: %d primaries, %d slots, spread %d; want %d primaries, all slots, spread <= %d",
			counts, len(counts), total, hi-lo, shards, topology.DefaultBatchSize)
	}
	t.Logf("slots per primary: %v", counts)
}

// dialPod connects to one pod as the default user, which is open while the
// cluster has no ACL binding. A TLS cluster's nodes listen only for TLS:
// the pod is reached with the CA its cluster's nodes mount, verified with
// the pod's own name, so the convergence checks serve both kinds.
func dialPod(ns, name string) (*vk.Node, error) {
	ctx := context.Background()
	var pod corev1.Pod
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pod); err != nil {
		return nil, err
	}
	if pod.Status.PodIP == "" {
		return nil, fmt.Errorf("pod %s has no address", name)
	}
	target := vk.Target{Address: net.JoinHostPort(pod.Status.PodIP, "6379"), Dialer: local.Runtime.DialContext}
	cluster := pod.Labels[valkeyv1.LabelInstance]
	var mounted corev1.Secret
	err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: render.NodeTLSSecretName(cluster)}, &mounted)
	switch {
	case err == nil:
		target.TLS = &vk.TLS{CA: mounted.Data[tlssecret.KeyCA], ServerName: render.PodFQDN(name, cluster, ns, clusterDomain)}
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading the TLS material of %s: %w", name, err)
	}
	return vk.Dial(ctx, target)
}

// podMyself is a pod's own line of CLUSTER NODES: its ID, slots and any
// slot it is migrating or importing.
func podMyself(t testing.TB, ns, name string) vk.ClusterNode {
	t.Helper()
	n, err := dialPod(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	nodes, err := n.ClusterNodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	me, _ := nodes.Myself()
	return me
}

// waitConverged waits for waitActive's shape and more: every ValkeyNode
// Active (no join or departure in flight), and the nodes themselves
// reporting exactly shards primaries with slots and shards*replicas
// replicas whose link is up.
func waitConverged(t testing.TB, key client.ObjectKey, shards, replicas int, timeout time.Duration) *valkeyv1.ValkeyCluster {
	t.Helper()
	start := time.Now()
	var vc *valkeyv1.ValkeyCluster
	eventually(t, timeout, fmt.Sprintf("%s converged to %dx%d", key, shards, replicas), func() error {
		vc = getCluster(t, key)
		s := vc.Status
		if s.State != valkeyv1.StateActive || s.SlotsAssigned != topology.TotalSlots || int(s.Shards) != shards || len(s.Nodes) != shards*(1+replicas) {
			return fmt.Errorf("state %q, %d slots, %d shards, %d nodes; conditions %v", s.State, s.SlotsAssigned, s.Shards, len(s.Nodes), conditionSummary(vc))
		}
		// Active alone also covers healing; the planner's Done is what says
		// the whole change, slot balance included, is finished.
		if p := meta.FindStatusCondition(s.Conditions, "Progressing"); p == nil || p.Status != metav1.ConditionFalse || p.ObservedGeneration != vc.Generation {
			return fmt.Errorf("still progressing: %v", conditionSummary(vc))
		}
		if r := s.Resharding; r != nil {
			return fmt.Errorf("resharding %s, moving %+v", r.Progress, r.Moving)
		}
		return testenv.MembersConverged(context.Background(), k8sClient, key, s.Nodes, shards, replicas, func(name string) (*vk.Node, error) {
			return dialPod(key.Namespace, name)
		})
	})
	for _, sh := range vc.Status.ShardStatuses {
		if len(sh.Replicas) != replicas {
			t.Fatalf("shard %d has %d replicas, want %d", sh.Index, len(sh.Replicas), replicas)
		}
	}
	t.Logf("%s converged to %dx%d in %s", key, shards, replicas, time.Since(start).Round(time.Second))
	return vc
}

// updateCluster applies mutate to the latest version of the cluster.
func updateCluster(t testing.TB, key client.ObjectKey, mutate func(vc *valkeyv1.ValkeyCluster)) {
	t.Helper()
	eventually(t, 30*time.Second, "updating "+key.String(), func() error {
		vc := getCluster(t, key)
		mutate(vc)
		return k8sClient.Update(context.Background(), vc)
	})
}

func seedOf(key client.ObjectKey) string {
	return fmt.Sprintf("%s.%s.svc.cluster.local:6379", key.Name, key.Namespace)
}

// metricValue reads one series from the operator's metrics registry.
func metricValue(name string, labels map[string]string) (float64, bool) {
	values := metricSamples(name, labels)
	if len(values) == 0 {
		return 0, false
	}
	return values[0], true
}

// metricSamples are the values of the in-process operator's series of the
// named gauge or counter that carry every label given.
func metricSamples(name string, labels map[string]string) []float64 {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return nil
	}
	var out []float64
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue next
				}
			}
			if g := m.GetGauge(); g != nil {
				out = append(out, g.GetValue())
			} else if c := m.GetCounter(); c != nil {
				out = append(out, c.GetValue())
			}
		}
	}
	return out
}
