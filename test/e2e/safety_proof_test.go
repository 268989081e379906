package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/resolve"
)

// A label edit on a running pod is not the loss of its node. The operator
// caches only the pods that carry its labels, so a pod someone strips of
// one drops out of that view while its process serves on; a primary with
// no replica taken for dead is recreated empty, and its shard's keys are
// gone. The pod must be read around the cache, its node kept, and its
// labels put back. Each label the cache or the member list selects on is
// removed in turn, from a different primary of the same cluster.
func TestLabelEditDoesNotKillPrimary(t *testing.T) {
	t.Parallel()
	key := newPlainCluster(t, "safety-labels", "cache", 3, 0)
	c := clusterClient(t, seedOf(key), nil)
	data := writeKeys(t, c, "labels", 1000)
	// Watched rather than polled: a DataLost that is True for a moment is
	// still a shard recreated empty.
	dataLost := (&tlsFixture{t: t, ns: key.Namespace, name: key.Name, key: key}).watchCondition(valkeyv1.CondDataLost)

	for i, label := range []struct{ name, key string }{
		{"managed-by", valkeyv1.LabelManagedBy},
		{"instance", valkeyv1.LabelInstance},
	} {
		// After a failure the cluster has lost keys, and a second edit on it
		// would prove nothing.
		if !t.Run(label.name, func(t *testing.T) { removeLabelFromPrimary(t, key, c, i, label.key, data) }) {
			break
		}
	}

	for _, cond := range dataLost() {
		if cond.Status == metav1.ConditionTrue {
			t.Errorf("DataLost was set (%s): %s", cond.Reason, cond.Message)
		}
	}
}

// removeLabelFromPrimary removes label from the pod of shard's primary and
// waits for the operator to put it back, failing at the first sign that it
// took the node for lost.
func removeLabelFromPrimary(t *testing.T, key client.ObjectKey, c valkey.Client, shard int, label string, data map[string]string) {
	ctx := context.Background()
	vc := getCluster(t, key)
	members := slices.Sorted(slices.Values(vc.Status.Nodes))
	victim := vc.Status.ShardStatuses[shard].Primary
	podKey := client.ObjectKey{Namespace: key.Namespace, Name: victim}
	var pod corev1.Pod
	if err := k8sClient.Get(ctx, podKey, &pod); err != nil {
		t.Fatal(err)
	}
	want, ok := pod.Labels[label]
	if !ok {
		t.Fatalf("pod %s carries no label %s to remove: %v", victim, label, pod.Labels)
	}
	var node valkeyv1.ValkeyNode
	if err := k8sClient.Get(ctx, podKey, &node); err != nil {
		t.Fatalf("ValkeyNode of pod %s: %v", victim, err)
	}

	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{label: nil}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := k8sClient.Patch(ctx, &pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("removing label %s from pod %s: %v", label, victim, err)
	}
	if _, ok := pod.Labels[label]; ok {
		t.Fatalf("pod %s still carries %s after the patch", victim, label)
	}
	start := time.Now()

	eventually(t, 2*time.Minute, fmt.Sprintf("label %s=%s back on pod %s and the cluster Active", label, want, victim), func() error {
		vc := getCluster(t, key)
		if lost := condition(vc, valkeyv1.CondDataLost); lost != nil && lost.Status == metav1.ConditionTrue {
			t.Fatalf("DataLost set after removing %s from pod %s: %s (%s): %s", label, victim, lost.Status, lost.Reason, lost.Message)
		}
		if now := slices.Sorted(slices.Values(vc.Status.Nodes)); !slices.Equal(now, members) {
			t.Fatalf("members changed after removing %s from pod %s: %v, were %v; conditions %v", label, victim, now, members, conditionSummary(vc))
		}
		var p corev1.Pod
		if err := k8sClient.Get(ctx, podKey, &p); apierrors.IsNotFound(err) {
			t.Fatalf("pod %s gone after its label %s was removed", victim, label)
		} else if err != nil {
			return err
		}
		if p.UID != pod.UID || p.DeletionTimestamp != nil {
			t.Fatalf("pod %s replaced or deleted after its label %s was removed: %s", victim, label, podPhase(key.Namespace, victim))
		}
		var n valkeyv1.ValkeyNode
		if err := k8sClient.Get(ctx, podKey, &n); apierrors.IsNotFound(err) {
			t.Fatalf("ValkeyNode %s deleted after its pod's label %s was removed", victim, label)
		} else if err != nil {
			return err
		}
		if n.UID != node.UID || n.DeletionTimestamp != nil {
			t.Fatalf("ValkeyNode %s replaced or being deleted after its pod's label %s was removed", victim, label)
		}
		if got, ok := p.Labels[label]; !ok || got != want {
			return fmt.Errorf("label %s = %q (present %v); state %s", label, got, ok, vc.Status.State)
		}
		if vc.Status.State != valkeyv1.StateActive {
			return fmt.Errorf("state %s (%s)", vc.Status.State, vc.Status.Message)
		}
		return nil
	})
	t.Logf("label %s back on pod %s after %s", label, victim, time.Since(start).Round(time.Second))
	waitConverged(t, key, 3, 0, time.Minute)
	checkAll(t, c, data)
}

// A reference that stops resolving (a binding naming a ValkeyRole not yet
// created, the cluster's ValkeyConfig deleted with its finalizer stripped)
// holds every change the spec
// asks for, not the healing of what the cluster already runs: a lost
// replica is still reported and replaced while the status keeps naming the
// broken reference. Once the reference
// resolves again, so does the condition.
func TestBrokenReferenceKeepsHealing(t *testing.T) {
	t.Parallel()
	const ns = "safety-refs"
	ctx := context.Background()
	createNamespace(t, ns)
	// The config is this test's own: deleting it touches no other cluster.
	cfg := createMenu(t, ns)
	key := newClusterWith(t, ns, "cache", cfg, 3, 1)
	c := clusterClient(t, seedOf(key), nil)
	data := writeKeys(t, c, "refs", 2000)
	// Every key on both nodes of its shard before one is lost, so a key
	// missing later was lost by the repair, not to replication lag.
	waitReplicated(t, c)

	// Each case breaks a reference, loses a replica while it is broken,
	// then repairs the reference; a failed one leaves the cluster broken for
	// the next.
	ok := t.Run("role", func(t *testing.T) {
		f := &tlsFixture{t: t, ns: ns, name: key.Name, key: key}
		const role = "safety-refs-missing"
		bad := binding("reader", []valkeyv1.PasswordHash{passwordHash("reader-password")}, role, keys("*", valkeyv1.KeyAccessRead))
		updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.ACL = append(vc.Spec.ACL, bad) })
		f.waitCondition(valkeyv1.CondReferencesResolved, metav1.ConditionFalse, resolve.ReasonRoleNotFound, "", time.Minute)

		healWhileBroken(t, f, c, data, resolve.ReasonRoleNotFound, role)

		updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) {
			vc.Spec.ACL = slices.DeleteFunc(vc.Spec.ACL, func(b valkeyv1.AclBinding) bool { return b.Username == bad.Username })
		})
		f.waitCondition(valkeyv1.CondReferencesResolved, metav1.ConditionTrue, valkeyv1.ReasonResolved, "", time.Minute)
		waitConverged(t, key, 3, 1, 2*time.Minute)
	})
	if !ok {
		return
	}

	t.Run("config", func(t *testing.T) {
		f := &tlsFixture{t: t, ns: ns, name: key.Name, key: key}
		var old valkeyv1.ValkeyConfig
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: cfg}, &old); err != nil {
			t.Fatal(err)
		}
		if err := k8sClient.Delete(ctx, &old); err != nil {
			t.Fatalf("deleting ValkeyConfig %s: %v", cfg, err)
		}
		// A config in use is held by its finalizer; an administrator who
		// strips it anyway leaves the cluster with a reference to nothing.
		var held valkeyv1.ValkeyConfig
		waitDeletionBlocked(t, &held, cfg, fmt.Sprintf("ValkeyConfig %s is in use by ValkeyClusters %s/%s;", cfg, ns, key.Name))
		patch := client.MergeFrom(held.DeepCopy())
		held.Finalizers = nil
		if err := k8sClient.Patch(ctx, &held, patch); err != nil {
			t.Fatalf("stripping the finalizers of ValkeyConfig %s: %v", cfg, err)
		}
		eventually(t, 30*time.Second, "ValkeyConfig "+cfg+" gone", func() error {
			var got valkeyv1.ValkeyConfig
			if err := k8sClient.Get(ctx, client.ObjectKey{Name: cfg}, &got); !apierrors.IsNotFound(err) {
				return fmt.Errorf("get: %v; finalizers %v", err, got.Finalizers)
			}
			return nil
		})
		f.waitCondition(valkeyv1.CondReferencesResolved, metav1.ConditionFalse, resolve.ReasonConfigNotFound, "", time.Minute)

		healWhileBroken(t, f, c, data, resolve.ReasonConfigNotFound, cfg)

		back := &valkeyv1.ValkeyConfig{ObjectMeta: metav1.ObjectMeta{Name: cfg}, Spec: old.Spec}
		if err := k8sClient.Create(ctx, back); err != nil {
			t.Fatalf("recreating ValkeyConfig %s: %v", cfg, err)
		}
		f.waitCondition(valkeyv1.CondReferencesResolved, metav1.ConditionTrue, valkeyv1.ReasonResolved, "", time.Minute)
		waitConverged(t, key, 3, 1, 2*time.Minute)
		checkAll(t, c, data)
	})
}

// healWhileBroken deletes a replica's pod while ReferencesResolved is
// False with reason, and demands that the loss is reported and repaired
// with every key kept, while the condition keeps naming the broken
// reference, name.
func healWhileBroken(t *testing.T, f *tlsFixture, c valkey.Client, data map[string]string, reason, name string) {
	t.Helper()
	// Watched rather than polled: a condition that flips for a moment
	// would claim the broken reference resolved.
	references := f.watchCondition(valkeyv1.CondReferencesResolved)
	lost := f.cluster().Status.ShardStatuses[0].Replicas[0]
	start := time.Now()
	fail(t, f.ns, lost, podDeleted)
	eventually(t, time.Minute, "Degraded=True while "+lost+" is missing", func() error {
		vc := f.cluster()
		if d := condition(vc, valkeyv1.CondDegraded); d == nil || d.Status != metav1.ConditionTrue {
			return fmt.Errorf("%s; state %s, nodes %v, conditions %v", podPhase(f.ns, lost), vc.Status.State, vc.Status.Nodes, conditionSummary(vc))
		}
		return nil
	})
	waitReplaced(t, f.key, lost, 3, 1)
	t.Logf("%s replaced after %s with the reference broken", lost, time.Since(start).Round(time.Second))
	checkAll(t, c, data)
	seen := references()
	if len(seen) == 0 {
		t.Fatal("no ReferencesResolved condition seen")
	}
	for _, cond := range seen {
		if cond.Status != metav1.ConditionFalse || cond.Reason != reason || !strings.Contains(cond.Message, name) {
			t.Fatalf("ReferencesResolved became %s (%s): %q while %s was still broken; want False (%s)", cond.Status, cond.Reason, cond.Message, name, reason)
		}
	}
}
