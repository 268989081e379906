package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// A roll whose replacement pod cannot be scheduled stalls on that shard: the
// old pods keep serving, Progressing carries the scheduler's message, and the
// roll resumes by itself once a node matches.
func TestRollStallsOnUnschedulablePod(t *testing.T) {
	t.Parallel()
	const label, value = "e2e.valkey.gomomento.com/pending-roll", "yes"
	key := newPlainCluster(t, "pending", "cache", 1, 1)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 500)
	ctx := context.Background()
	old := slices.Clone(getCluster(t, key).Status.Nodes)
	load := startLoad(c, "pending-load")

	updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) {
		vc.Spec.Placement = &valkeyv1.Placement{NodeSelector: map[string]string{label: value}}
	})
	var stalled valkeyv1.ValkeyCluster
	eventually(t, 2*time.Minute, "Progressing names the unschedulable pod", func() error {
		stalled = *getCluster(t, key)
		p := meta.FindStatusCondition(stalled.Status.Conditions, "Progressing")
		if p == nil || p.Reason != "PodUnschedulable" {
			return fmt.Errorf("Progressing %+v", p)
		}
		// The scheduler's own words reach the status.
		if !strings.Contains(p.Message, "node(s) didn't match Pod's node affinity/selector") {
			return fmt.Errorf("Progressing message lacks the scheduler's reason: %q", p.Message)
		}
		return nil
	})
	if stalled.Status.State != valkeyv1.StateUpdating {
		t.Errorf("state %s while a roll is stalled, want Updating", stalled.Status.State)
	}
	if d := meta.FindStatusCondition(stalled.Status.Conditions, "Degraded"); d == nil || d.Status != "False" {
		t.Errorf("a stalled roll is not a degraded cluster: Degraded %+v", d)
	}
	for _, n := range old {
		if !slices.Contains(stalled.Status.Nodes, n) {
			t.Fatalf("node %s retired while its replacement cannot run; nodes %v", n, stalled.Status.Nodes)
		}
	}
	checkAll(t, c, before)

	// Capacity appears: every node gets the label.
	var nodes corev1.NodeList
	if err := k8sClient.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	for i := range nodes.Items {
		setNodeLabel(t, nodes.Items[i].Name, label, value)
		name := nodes.Items[i].Name
		t.Cleanup(func() { setNodeLabel(t, name, label, "") })
	}
	eventually(t, 5*time.Minute, "every node replaced once schedulable", func() error {
		vc := getCluster(t, key)
		for _, n := range vc.Status.Nodes {
			if slices.Contains(old, n) {
				return fmt.Errorf("%s not replaced yet; state %s", n, vc.Status.State)
			}
		}
		return nil
	})
	waitConverged(t, key, 1, 1, 5*time.Minute)
	acked := load.finish(t)
	checkAll(t, c, before)
	checkAll(t, c, acked)
}

// setNodeLabel sets (or, with an empty value, removes) one label on a Node.
func setNodeLabel(t testing.TB, name, label, value string) {
	t.Helper()
	var n corev1.Node
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: name}, &n); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	if value == "" {
		delete(n.Labels, label)
	} else {
		n.Labels[label] = value
	}
	if err := k8sClient.Patch(context.Background(), &n, patch); err != nil {
		t.Fatal(err)
	}
}
