package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// A persistent 1x1 cluster under load loses its primary's disk: the claim
// is deleted and then the pod, as a user losing the volume would (the
// claim's protection finalizer holds it while the pod runs). The node can
// never come back with its data: the replica takes over, the lost node is
// replaced by a new one on a claim of its own, every acknowledged write
// reads back and no loss is reported, since the replica held every key.
func TestPersistenceLostClaimFailsOverToReplica(t *testing.T) {
	t.Parallel()
	const ns = "persist-lost-claim"
	key := newDurableCluster(t, ns, 1, 1)
	vc := getCluster(t, key)
	lost := vc.Status.ShardStatuses[0].Primary
	heir := ""
	for _, n := range vc.Status.Nodes {
		if n != lost {
			heir = n
		}
	}
	claim := claimOf(t, ns, lost)
	c := clusterClient(t, seedOf(key), nil)
	load := startLoad(c, "lost-claim")
	eventually(t, 30*time.Second, "writes acknowledged before the loss", func() error {
		if n := load.writes.Load(); n < 200 {
			return fmt.Errorf("%d writes so far", n)
		}
		return nil
	})

	loseClaim(t, ns, lost)
	vc = waitReplaced(t, key, lost, 1, 1)
	acked := load.finish(t)
	checkAll(t, c, acked)
	if load.stale.Load() > 0 {
		t.Errorf("%d reads returned another value than the one last acknowledged: %v", load.stale.Load(), load.errs)
	}
	if got := vc.Status.ShardStatuses[0].Primary; got != heir {
		t.Errorf("the primary is %s, want the former replica %s", got, heir)
	}
	assertEvent(t, key, string(topology.KindDeleteNode), topology.ReasonVolumeLost+": "+lost)
	if n := countEvents(t, key, valkeyv1.ReasonPrimaryLostNoReplica, ""); n > 0 {
		t.Errorf("%d PrimaryLostNoReplica Events: the replica held every key", n)
	}
	for _, cond := range vc.Status.Conditions {
		if cond.Type == valkeyv1.CondDataLost && cond.Status == metav1.ConditionTrue {
			t.Errorf("DataLost %s: %s", cond.Reason, cond.Message)
		}
	}
	for _, n := range vc.Status.Nodes {
		if got := claimOf(t, ns, n); got.UID == claim.UID {
			t.Errorf("node %s is on the lost claim", n)
		}
	}
	assertClaimsOfMembersOnly(t, key)
}

// A persistent 1x0 cluster loses its only node's claim and pod: the keys
// are gone with the volume. The loss is reported as any primary lost with
// no replica (a Warning Event and DataLost naming the node and its slots),
// the shard is made anew, empty, on a new claim, and the cluster serves.
func TestPersistenceLostClaimNoReplicaReportsLoss(t *testing.T) {
	t.Parallel()
	const ns = "persist-lost-only"
	key := newDurableCluster(t, ns, 1, 0)
	vc := getCluster(t, key)
	lost := vc.Status.ShardStatuses[0].Primary
	slots := podMyself(t, ns, lost).Slots
	c := clusterClient(t, seedOf(key), nil)
	gone := writeKeys(t, c, "gone", 500)

	loseClaim(t, ns, lost)
	vc = waitReplaced(t, key, lost, 1, 0)
	assertDataLossReported(t, key, lost, slots)
	assertEvent(t, key, string(topology.KindDeleteNode), topology.ReasonVolumeLost+": "+lost)
	for k := range gone {
		if err := c.Do(context.Background(), c.B().Get().Key(k).Build()).Error(); !valkey.IsValkeyNil(err) {
			t.Fatalf("GET %s of the lost volume: %v, want no such key", k, err)
		}
	}
	eventually(t, time.Minute, "the cluster taking writes again", func() error {
		ctx := context.Background()
		if err := c.Do(ctx, c.B().Set().Key("after").Value("1").Build()).Error(); err != nil {
			return err
		}
		got, err := c.Do(ctx, c.B().Get().Key("after").Build()).ToString()
		if err != nil || got != "1" {
			return fmt.Errorf("GET after = %q, %v", got, err)
		}
		return nil
	})
	if vc.Status.State != valkeyv1.StateActive {
		t.Errorf("state %s after the loss, want Active", vc.Status.State)
	}
	assertClaimsOfMembersOnly(t, key)
}

// A persistent 1x1 cluster loses its replica's volume: the volume is
// deleted out from under its claim (its protection finalizer removed, as a
// failed disk's volume is cleaned up by hand), then the replica's pod. The
// claim says Lost, or names a volume that does not exist: the replica is
// forgotten and replaced by a new node on a claim of its own, and the
// primary, untouched, keeps every acknowledged write.
func TestPersistenceLostVolumeOfReplicaIsReplaced(t *testing.T) {
	t.Parallel()
	const ns = "persist-lost-volume"
	key := newDurableCluster(t, ns, 1, 1)
	vc := getCluster(t, key)
	primary := vc.Status.ShardStatuses[0].Primary
	lost := ""
	for _, n := range vc.Status.Nodes {
		if n != primary {
			lost = n
		}
	}
	c := clusterClient(t, seedOf(key), nil)
	load := startLoad(c, "lost-volume")
	eventually(t, 30*time.Second, "writes acknowledged before the loss", func() error {
		if n := load.writes.Load(); n < 200 {
			return fmt.Errorf("%d writes so far", n)
		}
		return nil
	})

	ctx := context.Background()
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: claimOf(t, ns, lost).Spec.VolumeName}}
	if err := k8sClient.Delete(ctx, pv); err != nil {
		t.Fatalf("deleting volume %s: %v", pv.Name, err)
	}
	eventually(t, time.Minute, "volume "+pv.Name+" gone", func() error {
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), pv)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(pv.Finalizers) > 0 {
			patch := client.MergeFrom(pv.DeepCopy())
			pv.Finalizers = nil
			return k8sClient.Patch(ctx, pv, patch)
		}
		return fmt.Errorf("volume %s still there", pv.Name)
	})
	fail(t, ns, lost, podDeleted)
	vc = waitReplaced(t, key, lost, 1, 1)
	acked := load.finish(t)
	checkAll(t, c, acked)
	if load.stale.Load() > 0 {
		t.Errorf("%d reads returned another value than the one last acknowledged: %v", load.stale.Load(), load.errs)
	}
	if got := vc.Status.ShardStatuses[0].Primary; got != primary {
		t.Errorf("the primary is %s, want %s untouched", got, primary)
	}
	assertEvent(t, key, string(topology.KindDeleteNode), topology.ReasonVolumeLost+": "+lost)
	if n := countEvents(t, key, valkeyv1.ReasonPrimaryLostNoReplica, ""); n > 0 {
		t.Errorf("%d PrimaryLostNoReplica Events: only a replica was lost", n)
	}
	assertClaimsOfMembersOnly(t, key)
}

// loseClaim deletes a node's claim, then its pod: the claim goes once no
// pod uses it.
func loseClaim(t testing.TB, ns, node string) {
	t.Helper()
	ctx := context.Background()
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: render.NodeClaimName(node)}}
	if err := k8sClient.Delete(ctx, claim); err != nil {
		t.Fatalf("deleting claim %s: %v", claim.Name, err)
	}
	fail(t, ns, node, podDeleted)
	eventually(t, 2*time.Minute, "claim "+claim.Name+" gone", func() error {
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(claim), claim)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("claim %s: %v, finalizers %v (%s)", claim.Name, err, claim.Finalizers, podPhase(ns, node))
	})
}

func claimOf(t testing.TB, ns, node string) corev1.PersistentVolumeClaim {
	t.Helper()
	var claim corev1.PersistentVolumeClaim
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: render.NodeClaimName(node)}, &claim); err != nil {
		t.Fatalf("the claim of node %s: %v", node, err)
	}
	return claim
}

// assertClaimsOfMembersOnly waits until the namespace's claims are exactly
// the cluster's members' own, each bound: a retired or lost node's claim
// is gone with it.
func assertClaimsOfMembersOnly(t testing.TB, key client.ObjectKey) {
	t.Helper()
	eventually(t, 2*time.Minute, "a bound claim for each member and no other", func() error {
		vc := getCluster(t, key)
		var want []string
		for _, n := range vc.Status.Nodes {
			want = append(want, render.NodeClaimName(n))
		}
		var list corev1.PersistentVolumeClaimList
		if err := k8sClient.List(context.Background(), &list, client.InNamespace(key.Namespace)); err != nil {
			return err
		}
		var got []string
		for _, pvc := range list.Items {
			got = append(got, pvc.Name)
			if slices.Contains(want, pvc.Name) && pvc.Status.Phase != corev1.ClaimBound {
				return fmt.Errorf("claim %s is %s", pvc.Name, pvc.Status.Phase)
			}
		}
		if !slices.Equal(sorted(got), sorted(want)) {
			return fmt.Errorf("claims %v, want the members' %v", sorted(got), sorted(want))
		}
		return nil
	})
}
