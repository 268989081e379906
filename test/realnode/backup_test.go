package realnode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
)

// backupBucket is the bucket the backup test writes to, unless
// VALKEY_CONFORMANCE_S3_BUCKET names another.
const backupBucket = "valkey-backups"

// TestBackupAndRestoreIntoAnotherShape backs up a 2x1 cluster holding
// keys to a real S3 server (backupStore: outside the local node's cluster
// at the node's address, or the one given for a cluster of the user's),
// and restores the backup into a new 3x0 cluster. The backup completes
// with each shard copied from its replica, its objects in the bucket as
// the status says; the restore's loaders run as pods and replicate each file
// from the operator; the new cluster is not Active before its restore
// completed, then serves every key and nothing else, and the loaders are
// gone.
func TestBackupAndRestoreIntoAnotherShape(t *testing.T) {
	store := backupStore(t)
	ns := "backup"
	createNamespace(t, ns)
	ctx := context.Background()
	cfg := createMenu(t, "backup", false)
	src := createCluster(t, ns, "source", cfg, 2, 1)
	vc := waitConverged(t, src, 2, 1, 5*time.Minute)
	c := clusterClient(t, clusterPods(t, src)[0].Status.PodIP)
	want := writeKeys(t, c, "backup", 2000)
	if err := c.Do(ctx, c.B().Hset().Key("backup:hash").FieldValue().FieldValue("a", "1").FieldValue("b", "2").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, c.B().Set().Key("backup:expiring").Value("soon").Ex(time.Hour).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	waitReplicated(t, c)

	if err := k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "store-credentials"},
		Data: map[string][]byte{"accessKeyID": []byte(store.AccessKey), "secretAccessKey": []byte(store.SecretKey)}}); err != nil {
		t.Fatal(err)
	}
	b := &valkeyv1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
		Spec: valkeyv1.ValkeyBackupSpec{Cluster: src.Name, Destination: valkeyv1.BackupDestination{
			Bucket: store.Bucket, Endpoint: store.Endpoint, Insecure: !store.Secure, CredentialsSecretRef: "store-credentials",
		}}}
	t0 := time.Now()
	if err := k8sClient.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), b) })
	eventually(t, 3*time.Minute, "backup nightly Completed", func() error {
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return err
		}
		if b.Status.Phase == valkeyv1.BackupFailed {
			t.Fatalf("backup failed: %s", b.Status.Message)
		}
		if b.Status.Phase != valkeyv1.BackupCompleted {
			return fmt.Errorf("phase %q: %s", b.Status.Phase, b.Status.Message)
		}
		return nil
	})
	t.Logf("backup of 2x1 to %s completed in %v: %s, %d bytes", store.Endpoint, time.Since(t0).Round(100*time.Millisecond), b.Status.Path, b.Status.Bytes)
	if len(b.Status.Shards) != 2 {
		t.Fatalf("backup status lists %d shards, want 2: %+v", len(b.Status.Shards), b.Status)
	}
	replicas := map[string]bool{}
	for _, sh := range vc.Status.ShardStatuses {
		for _, r := range sh.Replicas {
			replicas[r] = true
		}
	}
	mc := store.Client(t)
	for i, s := range b.Status.Shards {
		// Copied from a replica, so the primaries serving clients do not fork.
		if !replicas[s.Node] {
			t.Errorf("shard %d was copied from %s, not a replica (replicas %v)", i, s.Node, replicas)
		}
		body := getObject(t, mc, store.Bucket, s.Object)
		sum := sha256.Sum256(body)
		if int64(len(body)) != s.Bytes || hex.EncodeToString(sum[:]) != s.SHA256 || len(body) == 0 {
			t.Errorf("shard %d: object %s is %d bytes with sha256 %x, the status says %d bytes, %s", i, s.Object, len(body), sum, s.Bytes, s.SHA256)
		}
	}

	loaders := watchLoaders(t, ns, "restored")
	t1 := time.Now()
	dst := createCluster(t, ns, "restored", cfg, 3, 0, func(s *valkeyv1.ValkeyClusterSpec) {
		s.Restore = &valkeyv1.ClusterRestore{BackupName: b.Name}
	})
	vc = waitRestored(t, dst, 3)
	t.Logf("restore into 3x0 Active in %v: %s", time.Since(t1).Round(100*time.Millisecond), vc.Status.Restore.Message)
	if r := vc.Status.Restore; r.ShardsDone != 2 || r.ShardsTotal != 2 || r.Keys < int64(len(want)+2) {
		t.Errorf("restore status %+v, want 2 of 2 shards and %d keys", r, len(want)+2)
	}
	waitConverged(t, dst, 3, 0, 2*time.Minute)

	rc := clusterClient(t, clusterPods(t, dst)[0].Status.PodIP)
	checkAll(t, rc, want)
	if got, err := rc.Do(ctx, rc.B().Hgetall().Key("backup:hash").Build()).AsStrMap(); err != nil || got["a"] != "1" || got["b"] != "2" || len(got) != 2 {
		t.Errorf("backup:hash restored as %v (%v)", got, err)
	}
	if ttl, err := rc.Do(ctx, rc.B().Ttl().Key("backup:expiring").Build()).AsInt64(); err != nil || ttl <= 0 || ttl > 3600 {
		t.Errorf("backup:expiring restored with TTL %d (%v), want its hour", ttl, err)
	}
	// Nothing but what was written: the primaries' keys add up to it.
	var total int64
	for addr, n := range rc.Nodes() {
		k, err := n.Do(ctx, n.B().Dbsize().Build()).AsInt64()
		if err != nil {
			t.Fatalf("DBSIZE on %s: %v", addr, err)
		}
		total += k
	}
	if total != int64(len(want)+2) {
		t.Errorf("the restored primaries hold %d keys, want the %d written", total, len(want)+2)
	}

	seen := loaders.stop()
	if len(seen) != 2 {
		t.Errorf("%d loader pods seen (%v), want one per backed-up shard", len(seen), seen)
	}
	for name, l := range seen {
		if !l.ran || l.node == "" || nodeIsLocal() && l.node != node.Name {
			t.Errorf("loader %s: on node %q, ran %v; want it run on a node of the cluster", name, l.node, l.ran)
		}
	}
	eventually(t, time.Minute, "the loaders and their Secret gone", func() error {
		var pods corev1.PodList
		if err := k8sClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{valkeyv1.LabelRestoreOf: dst.Name}); err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d loader pods left", len(pods.Items))
		}
		var s corev1.Secret
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: render.RestoreLoaderSecretName(dst.Name)}, &s); err == nil {
			return fmt.Errorf("secret %s left", s.Name)
		}
		return nil
	})
}

// waitRestored waits for a restored cluster to be Active with its shape,
// failing at once if it is ever Active before its restore completed.
func waitRestored(t testing.TB, key client.ObjectKey, shards int) *valkeyv1.ValkeyCluster {
	t.Helper()
	var vc *valkeyv1.ValkeyCluster
	eventually(t, 5*time.Minute, key.Name+" restored and Active", func() error {
		vc = getCluster(t, key)
		r := vc.Status.Restore
		if r != nil && r.Phase == valkeyv1.RestoreFailed {
			t.Fatalf("%s: restore failed: %s", key.Name, r.Message)
		}
		if vc.Status.State != valkeyv1.StateActive {
			return fmt.Errorf("state %s, restore %+v", vc.Status.State, r)
		}
		if r == nil || r.Phase != valkeyv1.RestoreCompleted {
			t.Fatalf("%s is Active before its restore completed: %+v", key.Name, r)
		}
		if int(vc.Status.Shards) != shards {
			return fmt.Errorf("%d shards", vc.Status.Shards)
		}
		return nil
	})
	return vc
}

// loaderSeen is what a watch saw of one loader pod: the node it was bound
// to, and whether its server ran.
type loaderSeen struct {
	node string
	ran  bool
}

type loaderWatch struct {
	w    watch.Interface
	done chan struct{}
	mu   sync.Mutex
	seen map[string]loaderSeen
}

// watchLoaders records every restore loader of cluster from now on,
// however briefly it lives.
func watchLoaders(t testing.TB, ns, cluster string) *loaderWatch {
	t.Helper()
	w, err := clientset.CoreV1().Pods(ns).Watch(context.Background(), metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{valkeyv1.LabelRestoreOf: cluster}).String(),
	})
	if err != nil {
		t.Fatalf("watching the loaders of %s: %v", cluster, err)
	}
	lw := &loaderWatch{w: w, done: make(chan struct{}), seen: map[string]loaderSeen{}}
	go func() {
		defer close(lw.done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			lw.mu.Lock()
			s := lw.seen[p.Name]
			if p.Spec.NodeName != "" {
				s.node = p.Spec.NodeName
			}
			for _, c := range p.Status.ContainerStatuses {
				if c.Name == render.ContainerValkey && (c.State.Running != nil || c.State.Terminated != nil) {
					s.ran = true
				}
			}
			lw.seen[p.Name] = s
			lw.mu.Unlock()
		}
	}()
	t.Cleanup(func() { lw.stop() })
	return lw
}

func (lw *loaderWatch) stop() map[string]loaderSeen {
	lw.w.Stop()
	<-lw.done
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.seen
}

func getObject(t testing.TB, mc *minio.Client, bucket, object string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o, err := mc.GetObject(ctx, bucket, object, minio.GetObjectOptions{})
	if err != nil {
		t.Fatalf("getting %s: %v", object, err)
	}
	defer func() { _ = o.Close() }()
	b, err := io.ReadAll(o)
	if err != nil {
		t.Fatalf("reading %s: %v", object, err)
	}
	return b
}
