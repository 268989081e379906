package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
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

// deleteAtEnd deletes the cluster when the test ends: its nodes would
// otherwise keep running, and the operator reconciling them, through every
// later test.
func deleteAtEnd(t testing.TB, vc *valkeyv1.ValkeyCluster) {
	t.Cleanup(func() {
		obj := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: vc.Namespace, Name: vc.Name}}
		_ = k8sClient.Delete(context.Background(), obj)
	})
}

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
