package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/s3test"
)

// reactionDeadline is how long a hand-off between two controllers may take
// to show at the shipped pacing: a third of the shortest safety pass, so a
// reaction that waited for the pass instead of a wake fails.
var reactionDeadline = shippedSafety * 4 / 5 / 3

// scaleOutDeadline is how soon after the autoscaler's decision the new
// shard owns slots, as promised in docs/autoscaling.md.
const scaleOutDeadline = 60 * time.Second

// Where one controller writes what another acts on, the other is woken at
// once, at the shipped pacing (30 s samples, a five-minute safety pass):
// the autoscaler's decision reaches the cluster controller, a backup's
// completion the restore waiting for it and a restore's completion the
// cluster controller, a freed rollout slot the cluster waiting for it, and
// a cluster's deletion the deletion protection holding its config. Not
// parallel: it replaces the suite's operator, whose sampling and safety
// pass are quickened for other tests; its cases run side by side.
func TestReactionsAtShippedPacing(t *testing.T) {
	shippedPacingInstead(t)
	t.Run("autoscaling", func(t *testing.T) { t.Parallel(); autoscalingReaction(t) })
	t.Run("restore", func(t *testing.T) { t.Parallel(); restoreReaction(t) })
	t.Run("rollout", func(t *testing.T) { t.Parallel(); rolloutReaction(t) })
	t.Run("deletion", func(t *testing.T) { t.Parallel(); deletionReaction(t) })
}

// A 3x0 cluster filled past scaleOut.memoryPercent decides a fourth shard
// within a few samples, and the new shard owns slots within
// scaleOutDeadline of the decision, every key intact.
func autoscalingReaction(t *testing.T) {
	const ns = "react-autoscale"
	createNamespace(t, ns)
	cfg := createConfig(t, "small-"+ns, "8.0.1", valkeyv1.ValkeyConfigSpec{Valkey: map[string]string{"maxmemory": "16mb"}})
	key := newClusterWith(t, ns, "cache", cfg, 3, 0, func(s *valkeyv1.ValkeyClusterSpec) {
		// At 4 the cluster stays, whatever the samples say after the move.
		s.Autoscaling = &valkeyv1.Autoscaling{MinShards: 3, MaxShards: 4, ScaleOut: valkeyv1.ScaleOutTriggers{MemoryPercent: ptr.To(50.0)}}
	})
	c := clusterClient(t, seedOf(key), nil)
	// About 8.8 MB of values on each 16 MB primary: past 50%, short of
	// the limit, so every write is acknowledged.
	bulk := writeBulk(t, c, "bulk", 24000, 1024)
	filled := time.Now()

	var decided time.Time
	// A decision needs a sample past the threshold: the next one, or the
	// one after if the cluster's look was still in flight.
	eventually(t, 3*shippedSample+30*time.Second, "a ScaleOut decision", func() error {
		a := getCluster(t, key).Status.Autoscaling
		if a == nil || a.DesiredShards != 4 || a.LastScaleOutTime == nil {
			return fmt.Errorf("status.autoscaling %+v", a)
		}
		decided = a.LastScaleOutTime.Time
		return nil
	})
	t.Logf("scale-out decided %s after the fill", decided.Sub(filled).Round(time.Second))
	eventually(t, time.Until(decided.Add(scaleOutDeadline)), "the fourth shard owning slots", func() error {
		if got := getCluster(t, key); got.Status.Shards < 4 {
			return fmt.Errorf("%d slot-holding shards", got.Status.Shards)
		}
		return nil
	})
	t.Logf("the fourth shard owns slots %s after the decision", time.Since(decided).Round(time.Second))
	waitConverged(t, key, 4, 0, 3*time.Minute)
	checkAll(t, c, bulk)
}

// A cluster restores from a backup that does not exist yet: once it is
// taken, the restore begins without waiting out its back-off, and once
// the restore completes the cluster is Active without waiting for its
// safety pass.
func restoreReaction(t *testing.T) {
	const ns = "react-restore"
	store := s3test.Start(t)
	store.MakeBucket(t, backupBucket)
	src := newPlainCluster(t, ns, "source", 1, 0)
	keys := writeKeys(t, clusterClient(t, seedOf(src), nil), "restored", 500)
	createBackupCredentials(t, ns, "store-credentials", store.AccessKey, store.SecretKey)

	into := createCluster(t, ns, "into", menuConfigName(ns), 2, 0, func(s *valkeyv1.ValkeyClusterSpec) {
		s.Restore = &valkeyv1.ClusterRestore{BackupName: "later"}
	})
	eventually(t, 3*time.Minute, "the restore waiting for its backup", func() error {
		if r := getCluster(t, into).Status.Restore; r == nil || !strings.Contains(r.Message, "ValkeyBackup later does not exist") {
			return fmt.Errorf("restore status %+v", r)
		}
		return nil
	})
	b := createBackup(t, ns, "later", "source", "store-credentials", store.Endpoint, "")
	if b = waitBackupFinal(t, client.ObjectKeyFromObject(b)); b.Status.Phase != valkeyv1.BackupCompleted {
		t.Fatalf("backup %s: %s", b.Status.Phase, b.Status.Message)
	}
	// The backup's own stamp: the restore may begin before a poll sees it.
	backedUp := b.Status.CompletedAt.Time
	vc := waitRestored(t, into, 2)
	active := time.Now()
	completed := vc.Status.Restore.CompletedAt.Time
	t.Logf("restore completed %s after the backup, Active %s after the restore", completed.Sub(backedUp).Round(time.Second), active.Sub(completed).Round(time.Second))
	if took := active.Sub(backedUp); took > reactionDeadline {
		t.Errorf("Active %s after the backup it restores completed, want within %s: a hand-off waited for a pass", took.Round(time.Second), reactionDeadline)
	}
	checkAll(t, clusterClient(t, seedOf(into), nil), keys)
}

// Two clusters share a config allowing one roll at a time: once the first
// has rolled and given its slot back, the second takes it at once.
func rolloutReaction(t *testing.T) {
	const ns = "react-rollout"
	createNamespace(t, ns)
	config := createConfig(t, menuConfigName(ns), "8.0.1", valkeyv1.ValkeyConfigSpec{
		Valkey:  map[string]string{"maxmemory": "64mb"},
		Rollout: &valkeyv1.RolloutPolicy{MaxConcurrentClusters: ptr.To[int32](1)}})
	f := newRolloutFleet(t, ns, config, []string{"first", "second"}, nil)
	editConfig(t, config, func(v map[string]string) { v[restartOnlyKey] = restartOnlyValue })

	var holder string
	var freed time.Time
	eventually(t, 5*time.Minute, "the slot handed from one cluster to the other", func() error {
		var cfg valkeyv1.ValkeyConfig
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: config}, &cfg); err != nil {
			return err
		}
		var rolling []string
		if r := cfg.Status.Rollout; r != nil {
			for _, s := range r.Rolling {
				rolling = append(rolling, s.Cluster)
			}
		}
		switch {
		case len(rolling) > 1:
			t.Fatalf("%v rolling at once, the limit is 1", rolling)
		case holder == "" && len(rolling) == 1:
			holder = rolling[0]
		case holder != "" && len(rolling) == 0 && freed.IsZero():
			freed = time.Now()
		case holder != "" && len(rolling) == 1 && rolling[0] != holder:
			if freed.IsZero() {
				freed = time.Now()
			}
			return nil
		}
		if !freed.IsZero() && time.Since(freed) > reactionDeadline {
			t.Fatalf("the slot %s gave back is still free after %s", holder, reactionDeadline)
		}
		return fmt.Errorf("rolling %v, first holder %q", rolling, holder)
	})
	t.Logf("the slot %s gave back was taken %s later", holder, time.Since(freed).Round(100*time.Millisecond))
	for _, key := range f.keys {
		waitConverged(t, key, 1, 1, 5*time.Minute)
	}
	f.checkKeys(t)
}

// A config's deletion waits for the cluster using it, and completes once
// the cluster is gone.
func deletionReaction(t *testing.T) {
	const ns = "react-deletion"
	createNamespace(t, ns)
	config := createMenu(t, ns)
	key := newClusterWith(t, ns, "user", config, 1, 0)
	cfg := &valkeyv1.ValkeyConfig{}
	waitMenuFinalizer(t, cfg, config)
	if err := k8sClient.Delete(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	waitDeletionBlocked(t, cfg, config, fmt.Sprintf("ValkeyConfig %s is in use by ValkeyClusters %s/user;", config, ns))
	deleteCluster(t, key)
	gone := time.Now()
	eventually(t, reactionDeadline, config+" deleted once its user is gone", func() error {
		err := k8sClient.Get(context.Background(), client.ObjectKey{Name: config}, cfg)
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err == nil {
			return fmt.Errorf("still there, finalizers %v", cfg.GetFinalizers())
		}
		return nil
	})
	t.Logf("%s deleted %s after its last user", config, time.Since(gone).Round(100*time.Millisecond))
}
