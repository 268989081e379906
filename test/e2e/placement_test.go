package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

func podUIDs(pods map[string]*corev1.Pod) map[string]types.UID {
	out := map[string]types.UID{}
	for n, p := range pods {
		out[n] = p.UID
	}
	return out
}

func updateConfig(t testing.TB, name string, mutate func(*valkeyv1.ValkeyConfigSpec)) {
	t.Helper()
	var cfg valkeyv1.ValkeyConfig
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: name}, &cfg); err != nil {
		t.Fatal(err)
	}
	mutate(&cfg.Spec)
	if err := k8sClient.Update(context.Background(), &cfg); err != nil {
		t.Fatalf("updating config %s: %v", name, err)
	}
}

// waitUnschedulable waits for the cluster to report a pod the scheduler
// cannot place, with the scheduler's words (reason) in Progressing and in
// status.message, and checks it is not Active meanwhile.
func waitUnschedulable(t testing.TB, key client.ObjectKey, reason string) *valkeyv1.ValkeyCluster {
	t.Helper()
	var vc *valkeyv1.ValkeyCluster
	eventually(t, 2*time.Minute, "Progressing carries the scheduler's reason", func() error {
		vc = getCluster(t, key)
		p := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondProgressing)
		if p == nil || p.Reason != "PodUnschedulable" {
			return fmt.Errorf("Progressing %+v; state %s", p, vc.Status.State)
		}
		if !strings.Contains(p.Message, reason) {
			return fmt.Errorf("Progressing message lacks %q: %q", reason, p.Message)
		}
		if !strings.Contains(vc.Status.Message, reason) {
			return fmt.Errorf("status.message lacks %q: %q", reason, vc.Status.Message)
		}
		return nil
	})
	if vc.Status.State == valkeyv1.StateActive {
		t.Fatalf("cluster Active with a pod the scheduler cannot place: %s", vc.Status.Message)
	}
	return vc
}

// podsCreated counts the pods the operator created in a namespace (its
// Events on the ValkeyNodes). A cluster waiting on the scheduler creates
// none beyond the pending one; a fixed spec one replacement per pending
// node.
func podsCreated(t testing.TB, ns string) int {
	t.Helper()
	var list eventsv1.EventList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		if e.Regarding.Kind == "ValkeyNode" && e.Reason == valkeyv1.ReasonPodCreatedEvent {
			n++
		}
	}
	return n
}

// A pool tainted for caches takes Valkey only with the toleration: without
// it the pod stays Pending with the scheduler's reason in the cluster's
// status and nothing is replaced; the toleration added to the config, the
// cluster forms there.
func TestPlacementTaintedPool(t *testing.T) {
	t.Parallel()
	const ns = "placement-taint"
	pool := startNodePool(t, ns, true)
	createNamespace(t, ns)
	cfg := createConfig(t, "placement-taint", "8.0.1", valkeyv1.ValkeyConfigSpec{
		Valkey: map[string]string{"maxmemory": "64mb"},
		Pod:    &valkeyv1.PodSettings{NodeSelector: map[string]string{poolLabel: ns}},
	})
	key := createCluster(t, ns, "cache", cfg, 1, 0)
	waitUnschedulable(t, key, "untolerated taint")

	updateConfig(t, cfg, func(s *valkeyv1.ValkeyConfigSpec) {
		s.Pod.Tolerations = []corev1.Toleration{{Key: poolLabel, Operator: corev1.TolerationOpEqual, Value: ns, Effect: corev1.TaintEffectNoSchedule}}
	})
	waitConverged(t, key, 1, 0, 5*time.Minute)
	// The pending node and the one that replaced it once the config was
	// fixed: no more.
	if n := podsCreated(t, ns); n != 2 {
		t.Errorf("%d pods created, want 2 (the one the scheduler could not place, its replacement)", n)
	}
	for name, p := range clusterPods(t, key) {
		if !slices.Contains(pool, p.Spec.NodeName) {
			t.Errorf("pod %s on %s, not on the pool %v", name, p.Spec.NodeName, pool)
		}
	}
	c := clusterClient(t, seedOf(key), nil)
	checkAll(t, c, writeKeys(t, c, "pool", 100))
	deleteCluster(t, key)
}

// A required node affinity no node satisfies leaves the pod Pending with
// the scheduler's reason in the status; fixing the config heals the
// cluster.
func TestPlacementUnsatisfiableAffinity(t *testing.T) {
	t.Parallel()
	const ns = "placement-affinity"
	createNamespace(t, ns)
	nowhere := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: poolLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"nowhere"}}},
		}}},
	}}
	cfg := createConfig(t, "placement-affinity", "8.0.1", valkeyv1.ValkeyConfigSpec{
		Valkey: map[string]string{"maxmemory": "64mb"},
		Pod:    &valkeyv1.PodSettings{Affinity: nowhere},
	})
	key := createCluster(t, ns, "cache", cfg, 1, 0)
	waitUnschedulable(t, key, "didn't match Pod's node affinity/selector")

	updateConfig(t, cfg, func(s *valkeyv1.ValkeyConfigSpec) {
		s.Pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Operator = corev1.NodeSelectorOpNotIn
	})
	waitConverged(t, key, 1, 0, 5*time.Minute)
	if n := podsCreated(t, ns); n != 2 {
		t.Errorf("%d pods created, want 2 (the one the scheduler could not place, its replacement)", n)
	}
	for name, p := range clusterPods(t, key) {
		if p.Spec.Affinity == nil || p.Spec.Affinity.NodeAffinity == nil ||
			p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Operator != corev1.NodeSelectorOpNotIn {
			t.Errorf("pod %s does not carry the fixed affinity: %+v", name, p.Spec.Affinity)
		}
	}
	deleteCluster(t, key)
}

// The config's priority class reaches the pods (the admission plugin
// resolves it to the class's value); label and annotation edits of the
// config and the cluster are applied to the same pods; a cluster
// nodeSelector contradicting the config's is reported and changes nothing.
func TestPlacementPriorityAndLabelsInPlace(t *testing.T) {
	t.Parallel()
	const ns = "placement-labels"
	ctx := context.Background()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "placement-cache-critical"}, Value: 100000}
	if err := k8sClient.Create(ctx, pc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), pc) })
	createNamespace(t, ns)
	cfg := createConfig(t, "placement-labels", "8.0.1", valkeyv1.ValkeyConfigSpec{
		Valkey: map[string]string{"maxmemory": "64mb"},
		Pod: &valkeyv1.PodSettings{
			PriorityClassName: pc.Name,
			NodeSelector:      map[string]string{"localkube.gomomento.com/node": "true"},
			Labels:            map[string]valkeyv1.LabelValue{"cost-center": "4711"},
			Annotations:       map[string]string{"example.com/owner": "platform"},
		},
	})
	key := newClusterWith(t, ns, "cache", cfg, 1, 1, func(s *valkeyv1.ValkeyClusterSpec) {
		s.PodLabels = map[string]valkeyv1.LabelValue{"team": "payments"}
	})
	pods := clusterPods(t, key)
	if len(pods) != 2 {
		t.Fatalf("%d pods, want 2", len(pods))
	}
	for name, p := range pods {
		if p.Spec.PriorityClassName != pc.Name || p.Spec.Priority == nil || *p.Spec.Priority != pc.Value {
			t.Errorf("pod %s: priorityClassName %q, priority %v; want %s (%d)", name, p.Spec.PriorityClassName, p.Spec.Priority, pc.Name, pc.Value)
		}
		if p.Labels["cost-center"] != "4711" || p.Labels["team"] != "payments" || p.Annotations["example.com/owner"] != "platform" {
			t.Errorf("pod %s: labels %v, annotations %v", name, p.Labels, p.Annotations)
		}
	}
	uids := podUIDs(pods)

	updateConfig(t, cfg, func(s *valkeyv1.ValkeyConfigSpec) {
		s.Pod.Labels["cost-center"] = "4712"
		s.Pod.Annotations["example.com/tier"] = "gold"
	})
	updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) {
		vc.Spec.PodLabels["team"] = "checkout"
		// Contradicts the config's nodeSelector: reported, not applied.
		vc.Spec.Placement = &valkeyv1.Placement{NodeSelector: map[string]string{"localkube.gomomento.com/node": "false"}}
	})
	eventually(t, 2*time.Minute, "the edited labels and annotations on the same pods", func() error {
		now := clusterPods(t, key)
		if got := podUIDs(now); !maps.Equal(got, uids) {
			t.Fatalf("pods replaced by a label edit: %v, were %v", got, uids)
		}
		for name, p := range now {
			if p.Labels["cost-center"] != "4712" || p.Labels["team"] != "checkout" || p.Annotations["example.com/tier"] != "gold" {
				return fmt.Errorf("pod %s: labels %v, annotations %v", name, p.Labels, p.Annotations)
			}
		}
		return nil
	})
	eventually(t, time.Minute, "PlacementApplied reports the contradiction", func() error {
		c := meta.FindStatusCondition(getCluster(t, key).Status.Conditions, valkeyv1.CondPlacementApplied)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != valkeyv1.ReasonPlacementConflict ||
			!strings.Contains(c.Message, "localkube.gomomento.com/node=false contradicts the config's localkube.gomomento.com/node=true") {
			return fmt.Errorf("PlacementApplied %+v", c)
		}
		return nil
	})
	vc := waitConverged(t, key, 1, 1, time.Minute)
	if got := podUIDs(clusterPods(t, key)); !maps.Equal(got, uids) {
		t.Fatalf("pods replaced: %v, were %v", got, uids)
	}
	if vc.Status.State != valkeyv1.StateActive {
		t.Fatalf("state %s", vc.Status.State)
	}
	deleteCluster(t, key)
}

// A toleration added to the config rolls the cluster through the usual
// roll: every node replaced, one failover per shard, and no client request
// failed.
func TestPlacementTolerationEditRolls(t *testing.T) {
	t.Parallel()
	const ns = "placement-roll"
	const shards, replicas = 1, 1
	createNamespace(t, ns)
	cfg := createConfig(t, "placement-roll", "8.0.1", valkeyv1.ValkeyConfigSpec{Valkey: map[string]string{"maxmemory": "64mb"}})
	key := newClusterWith(t, ns, "cache", cfg, shards, replicas)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 500)
	old := slices.Clone(getCluster(t, key).Status.Nodes)
	failovers := countEvents(t, key, string(topology.KindFailover), "")
	load := startLoad(c, "placement-roll-load")

	toleration := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "cache", Effect: corev1.TaintEffectNoSchedule}
	updateConfig(t, cfg, func(s *valkeyv1.ValkeyConfigSpec) {
		s.Pod = &valkeyv1.PodSettings{Tolerations: []corev1.Toleration{toleration}}
	})
	sawUpdating := false
	eventually(t, 6*time.Minute, "every node replaced after the toleration edit", func() error {
		vc := getCluster(t, key)
		sawUpdating = sawUpdating || vc.Status.State == valkeyv1.StateUpdating
		for _, n := range vc.Status.Nodes {
			if slices.Contains(old, n) {
				return fmt.Errorf("%s not replaced yet; state %s", n, vc.Status.State)
			}
		}
		return nil
	})
	waitConverged(t, key, shards, replicas, 5*time.Minute)
	acked := load.finishUndisturbed(t)
	if !sawUpdating {
		t.Error("state never Updating during the roll")
	}
	if n := countEvents(t, key, string(topology.KindFailover), "") - failovers; n != shards {
		t.Errorf("%d Failover Events during the roll, want one per shard (%d)", n, shards)
	}
	for name, p := range clusterPods(t, key) {
		if !slices.ContainsFunc(p.Spec.Tolerations, func(x corev1.Toleration) bool { return x.MatchToleration(&toleration) }) {
			t.Errorf("pod %s lacks the toleration: %+v", name, p.Spec.Tolerations)
		}
	}
	checkAll(t, c, before)
	checkAll(t, c, acked)
	deleteCluster(t, key)
}
