package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// A persistent 2x1 cluster grows to 3x1 and shrinks back to 2x1 under the
// checking client's load: every key is kept, and after the scale-in the
// retired nodes' claims and their volumes are gone while every remaining
// node keeps the claim it had.
func TestPersistenceScalingKeepsKeysAndClaims(t *testing.T) {
	t.Parallel()
	const ns = "persist-scale"
	key := newDurableCluster(t, ns, 2, 1)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 2000)

	scaleShardsUnderLoad(t, key, c, before, 1, 2, 3)
	assertClaimsOfMembersOnly(t, key)
	grown := getCluster(t, key).Status.Nodes
	claims := map[string]corev1.PersistentVolumeClaim{}
	for _, n := range grown {
		claims[n] = claimOf(t, ns, n)
	}

	scaleShardsUnderLoad(t, key, c, before, 1, 3, 2)
	assertClaimsOfMembersOnly(t, key)
	kept := getCluster(t, key).Status.Nodes
	for _, n := range grown {
		was := claims[n]
		if slices.Contains(kept, n) {
			if now := claimOf(t, ns, n); now.UID != was.UID || now.Spec.VolumeName != was.Spec.VolumeName {
				t.Errorf("remaining node %s is on claim %s volume %s, was %s volume %s", n, now.UID, now.Spec.VolumeName, was.UID, was.Spec.VolumeName)
			}
			continue
		}
		eventually(t, 2*time.Minute, "the volume of retired node "+n+" deleted", func() error {
			var pv corev1.PersistentVolume
			if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: was.Spec.VolumeName}, &pv); !apierrors.IsNotFound(err) {
				return fmt.Errorf("volume %s: %v (phase %s)", was.Spec.VolumeName, err, pv.Status.Phase)
			}
			return nil
		})
	}
}

// A persistent 1x1 cluster is upgraded from Valkey 8.0.1 to 9.1.2 under
// the checking client's load: every node is replaced onto a claim of its
// own, runs 9.1.2, every acknowledged write reads back with its last
// acknowledged value, and the replaced nodes' claims are gone.
func TestPersistenceRollingUpgradeKeepsKeys(t *testing.T) {
	t.Parallel()
	const ns = "persist-upgrade"
	key := newDurableCluster(t, ns, 1, 1)
	ctx := context.Background()
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 1000)
	old := getCluster(t, key).Status.Nodes
	load := startLoad(c, "upgrade")

	var img valkeyv1.ValkeyImage
	if err := k8sClient.Get(ctx, client.ObjectKey{Name: menuImageName(ns)}, &img); err != nil {
		t.Fatal(err)
	}
	img.Spec.Tag, img.Spec.Version = "9.1.2", "9.1.2"
	if err := k8sClient.Update(ctx, &img); err != nil {
		t.Fatal(err)
	}
	eventually(t, 6*time.Minute, "every node replaced", func() error {
		vc := getCluster(t, key)
		for _, n := range vc.Status.Nodes {
			if slices.Contains(old, n) {
				return fmt.Errorf("%s not replaced yet; state %s", n, vc.Status.State)
			}
		}
		return nil
	})
	vc := waitConverged(t, key, 1, 1, 5*time.Minute)
	acked := load.finish(t)
	checkAll(t, c, before)
	checkAll(t, c, acked)
	if load.stale.Load() > 0 {
		t.Errorf("%d reads returned another value than the one last acknowledged: %v", load.stale.Load(), load.errs)
	}
	for _, name := range vc.Status.Nodes {
		n, err := dialPod(ns, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := n.InfoServer(ctx)
		n.Close()
		if err != nil {
			t.Fatal(err)
		}
		if info.Version.String() != "9.1.2" {
			t.Errorf("node %s runs %s, want 9.1.2", name, info.Version)
		}
	}
	assertClaimsOfMembersOnly(t, key)
}
