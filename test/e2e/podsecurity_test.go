package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
)

// createRestrictedNamespace creates a namespace whose pods the apiserver
// admits only when they meet the restricted Pod Security Standard, and
// checks that the admission really refuses a pod that does not.
func createRestrictedNamespace(t testing.TB, name string) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
	}}}
	if err := k8sClient.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	logNamespaceOnFailure(t, name)
	plain := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "no-security-context"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "valkey/valkey:8.0.1"}}},
	}
	err := k8sClient.Create(ctx, plain, client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), "PodSecurity") {
		t.Fatalf("a pod without securityContext in %s: %v; want a PodSecurity refusal", name, err)
	}
}

// checkShardBudgets checks one PodDisruptionBudget per shard, named
// {cluster}-shard-{n}, letting a drain evict one pod of the shard at a time
// (an integer minAvailable the disruption controller can evaluate) and
// selecting exactly that shard's pods.
func checkShardBudgets(t testing.TB, vc *valkeyv1.ValkeyCluster, shards, podsPerShard int) {
	t.Helper()
	ctx := context.Background()
	for n := range shards {
		name := fmt.Sprintf("%s-shard-%d", vc.Name, n)
		var pdb policyv1.PodDisruptionBudget
		eventually(t, 30*time.Second, "PodDisruptionBudget "+name, func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: name}, &pdb)
		})
		if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != podsPerShard-1 || pdb.Spec.MaxUnavailable != nil {
			t.Errorf("%s: maxUnavailable %v, minAvailable %v; want minAvailable %d", name, pdb.Spec.MaxUnavailable, pdb.Spec.MinAvailable, podsPerShard-1)
		}
		// The disruption controller can evaluate the budget: one pod of the
		// shard may go.
		eventually(t, 30*time.Second, name+" allowing one disruption", func() error {
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: name}, &pdb); err != nil {
				return err
			}
			if pdb.Status.DisruptionsAllowed != 1 {
				return fmt.Errorf("disruptionsAllowed %d, conditions %v", pdb.Status.DisruptionsAllowed, pdb.Status.Conditions)
			}
			return nil
		})
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			t.Fatalf("%s selector: %v", name, err)
		}
		var pods corev1.PodList
		if err := k8sClient.List(ctx, &pods, client.InNamespace(vc.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != podsPerShard {
			t.Errorf("%s selects %d pods, want the shard's %d", name, len(pods.Items), podsPerShard)
		}
		for _, p := range pods.Items {
			if p.Labels[valkeyv1.LabelShardIndex] != fmt.Sprint(n) {
				t.Errorf("%s selects pod %s of shard %q", name, p.Name, p.Labels[valkeyv1.LabelShardIndex])
			}
		}
	}
	var all policyv1.PodDisruptionBudgetList
	if err := k8sClient.List(ctx, &all, client.InNamespace(vc.Namespace), client.MatchingLabels(render.ClusterSelector(vc.Name))); err != nil {
		t.Fatal(err)
	}
	if len(all.Items) != shards {
		t.Errorf("%d PodDisruptionBudgets for %d shards", len(all.Items), shards)
	}
}

// Valkey pods pass the restricted Pod Security admission of a real
// apiserver: a cluster in a namespace enforcing it becomes Active.
func TestPodSecurityRestrictedNamespace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ns = "psa-restricted"
	createRestrictedNamespace(t, ns)
	cfg := createMenu(t, ns)
	vc := &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"},
		Spec:       valkeyv1.ValkeyClusterSpec{ConfigRef: cfg, Shards: 1, ReplicasPerShard: 1},
	}
	if err := k8sClient.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	got := waitActive(t, client.ObjectKeyFromObject(vc), 1, 1, 3*time.Minute)
	for _, name := range got.Status.Nodes {
		var pod corev1.Pod
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pod); err != nil {
			t.Fatalf("pod of node %s: %v", name, err)
		}
		if pod.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s is %s", name, pod.Status.Phase)
		}
	}
	checkShardBudgets(t, got, 1, 2)

	deleteCluster(t, client.ObjectKeyFromObject(vc))
}

// With placement.zoneSpread required, the members of a shard run in
// distinct zones, as the scheduler placed them: the local runtime's three
// nodes are in zone-a, zone-b and zone-c.
func TestPodSecurityRequiredZoneSpread(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ns = "psa-zones"
	createRestrictedNamespace(t, ns)
	cfg := createMenu(t, ns)
	vc := &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "spread"},
		Spec: valkeyv1.ValkeyClusterSpec{ConfigRef: cfg, Shards: 1, ReplicasPerShard: 2,
			Placement: &valkeyv1.Placement{ZoneSpread: valkeyv1.ZoneSpreadRequired}},
	}
	if err := k8sClient.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	got := waitActive(t, client.ObjectKeyFromObject(vc), 1, 2, 3*time.Minute)

	zones := map[string]string{}
	for _, name := range got.Status.Nodes {
		var pod corev1.Pod
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pod); err != nil {
			t.Fatalf("pod of node %s: %v", name, err)
		}
		if pod.Spec.NodeName == "" {
			t.Fatalf("pod %s is not scheduled", name)
		}
		var node corev1.Node
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, &node); err != nil {
			t.Fatalf("node %s of pod %s: %v", pod.Spec.NodeName, name, err)
		}
		zone := node.Labels[corev1.LabelTopologyZone]
		if zone == "" {
			t.Fatalf("node %s has no %s label", node.Name, corev1.LabelTopologyZone)
		}
		if other, ok := zones[zone]; ok {
			t.Errorf("pods %s and %s both run in %s", other, name, zone)
		}
		zones[zone] = name
		t.Logf("pod %s on node %s in %s", name, node.Name, zone)
	}
	if len(zones) != 3 {
		t.Errorf("the shard's 3 pods run in %d zones: %v", len(zones), zones)
	}
	checkShardBudgets(t, got, 1, 3)

	deleteCluster(t, client.ObjectKeyFromObject(vc))
}
