package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// restartOnlyKey is a directive Valkey reads only when it starts (CONFIG
// SET refuses it): an edit of it rolls the cluster, where an edit of
// maxmemory alone is applied in place.
const restartOnlyKey, restartOnlyValue = "tcp-backlog", "256"

// refusedPolicy is a maxmemory-policy no server accepts, by CONFIG SET or
// at start.
const refusedPolicy = "evict-nothing-ever"

// editConfig applies edit to the valkey map of the ValkeyConfig named name.
func editConfig(t testing.TB, name string, edit func(valkey map[string]string)) {
	t.Helper()
	eventually(t, 30*time.Second, "editing ValkeyConfig "+name, func() error {
		var cfg valkeyv1.ValkeyConfig
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: name}, &cfg); err != nil {
			return err
		}
		edit(cfg.Spec.Valkey)
		return k8sClient.Update(context.Background(), &cfg)
	})
}

// runningSettings is what CONFIG GET answers on one pod.
func runningSettings(ns, pod string, keys ...string) (map[string]string, error) {
	n, err := dialPod(ns, pod)
	if err != nil {
		return nil, err
	}
	defer n.Close()
	return n.ConfigGet(context.Background(), keys...)
}

// nodeIDs maps each pod to its Valkey node ID.
func nodeIDs(t testing.TB, f *tlsFixture) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range f.podNames() {
		out[p] = podMyself(t, f.ns, p).ID
	}
	return out
}

// An edit of maxmemory and maxmemory-policy reaches every node of a 2x1
// cluster in place: the same pods (UIDs, no restart) and Valkey node IDs,
// no failover, every acknowledged write read back; each node's ConfigMap
// carries the new values for its next start, and an Event names the nodes.
func TestLiveSettingsEditWithoutRestart(t *testing.T) {
	t.Parallel()
	const ns, shards, replicas = "live-edit", 2, 1
	key := newPlainCluster(t, ns, "cache", shards, replicas)
	f := &tlsFixture{t: t, ns: ns, name: key.Name, key: key}
	c := clusterClient(t, seedOf(key), nil)
	pods, ids := f.podSnapshot(), nodeIDs(t, f)
	failovers := countEvents(t, key, string(topology.KindFailover), "")

	load := startLoad(c, "live")
	editConfig(t, menuConfigName(ns), func(v map[string]string) {
		v["maxmemory"] = "96mb"
		v["maxmemory-policy"] = "allkeys-lru"
	})
	eventually(t, 2*time.Minute, "every node runs maxmemory 96mb and allkeys-lru", func() error {
		for _, p := range f.podNames() {
			got, err := runningSettings(ns, p, "maxmemory", "maxmemory-policy")
			if err != nil {
				return err
			}
			if got["maxmemory"] != fmt.Sprint(96<<20) || got["maxmemory-policy"] != "allkeys-lru" {
				return fmt.Errorf("%s runs %v", p, got)
			}
		}
		return nil
	})
	f.waitEvent(corev1.EventTypeNormal, valkeyv1.ReasonSettingsAppliedLive, "maxmemory, maxmemory-policy", time.Minute)
	eventually(t, time.Minute, "every node's valkey.conf and record carry the edit", func() error {
		for _, p := range f.podNames() {
			var cm corev1.ConfigMap
			if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: render.NodeConfigMapName(p)}, &cm); err != nil {
				return err
			}
			for _, line := range []string{"maxmemory 96mb\n", "maxmemory-policy allkeys-lru\n"} {
				if !strings.Contains(cm.Data["valkey.conf"], line) {
					return fmt.Errorf("ConfigMap of %s lacks %q", p, line)
				}
			}
			var node valkeyv1.ValkeyNode
			if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: p}, &node); err != nil {
				return err
			}
			if v, ok := node.Annotations[valkeyv1.AnnotationLiveSettingsPending]; ok {
				return fmt.Errorf("node %s still has %s pending", p, v)
			}
		}
		return nil
	})
	waitConverged(t, key, shards, replicas, 2*time.Minute)
	acked := load.finishUndisturbed(t)
	checkAll(t, c, acked)

	f.assertPodsUntouched(pods)
	if got := nodeIDs(t, f); !maps.Equal(got, ids) {
		t.Fatalf("node IDs changed: %v, were %v", got, ids)
	}
	if n := countEvents(t, key, string(topology.KindFailover), "") - failovers; n != 0 {
		t.Fatalf("%d Failover Events for a live edit, want none", n)
	}
}

// An edit of a directive Valkey reads only at start still rolls the
// cluster: every node replaced, one failover per shard, no client request
// failed and every acknowledged write read back.
func TestRestartSettingEditRolls(t *testing.T) {
	t.Parallel()
	const ns, shards, replicas = "live-roll", 2, 1
	key := newPlainCluster(t, ns, "cache", shards, replicas)
	c := clusterClient(t, seedOf(key), nil)
	old := slices.Clone(getCluster(t, key).Status.Nodes)
	failovers := countEvents(t, key, string(topology.KindFailover), "")

	load := startLoad(c, "roll")
	editConfig(t, menuConfigName(ns), func(v map[string]string) { v[restartOnlyKey] = restartOnlyValue })
	eventually(t, 6*time.Minute, "every node replaced", func() error {
		vc := getCluster(t, key)
		for _, n := range vc.Status.Nodes {
			if slices.Contains(old, n) {
				return fmt.Errorf("%s not replaced yet; state %s", n, vc.Status.State)
			}
		}
		return nil
	})
	vc := waitConverged(t, key, shards, replicas, 5*time.Minute)
	acked := load.finishUndisturbed(t)
	checkAll(t, c, acked)
	if n := countEvents(t, key, string(topology.KindFailover), "") - failovers; n != shards {
		t.Fatalf("%d Failover Events during the roll, want one per shard (%d)", n, shards)
	}
	for _, p := range vc.Status.Nodes {
		got, err := runningSettings(ns, p, restartOnlyKey)
		if err != nil {
			t.Fatal(err)
		}
		if got[restartOnlyKey] != restartOnlyValue {
			t.Fatalf("%s runs %s %q, want %q", p, restartOnlyKey, got[restartOnlyKey], restartOnlyValue)
		}
	}
}

// A CONFIG SET maxmemory-policy made by hand on one node is reported (a
// Warning Event, the ConfigDrift condition) and set back; with the
// cluster's config-drift annotation at report it is reported, counted in
// the metric and left as it is, and set back once the annotation goes.
func TestConfigDriftReverted(t *testing.T) {
	t.Parallel()
	const ns = "live-drift"
	createNamespace(t, ns)
	cfg := createConfig(t, "drift-"+ns, "8.0.1", valkeyv1.ValkeyConfigSpec{Valkey: map[string]string{
		"maxmemory": "64mb", "maxmemory-policy": "allkeys-lru"}})
	key := newClusterWith(t, ns, "cache", cfg, 1, 1)
	f := &tlsFixture{t: t, ns: ns, name: key.Name, key: key}
	pods := f.podSnapshot()
	victim := f.podNames()[0]
	handSet := func(policy string) {
		n, err := dialPod(ns, victim)
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		if err := n.ConfigSet(context.Background(), "maxmemory-policy", policy); err != nil {
			t.Fatal(err)
		}
	}
	policyIs := func(want string) func() error {
		return func() error {
			got, err := runningSettings(ns, victim, "maxmemory-policy")
			if err != nil {
				return err
			}
			if got["maxmemory-policy"] != want {
				return fmt.Errorf("%s runs maxmemory-policy %q", victim, got["maxmemory-policy"])
			}
			return nil
		}
	}

	handSet("volatile-lru")
	f.waitEvent(corev1.EventTypeWarning, valkeyv1.ReasonSettingsDrifted, victim+" (maxmemory-policy)", 2*time.Minute)
	f.waitEvent(corev1.EventTypeNormal, valkeyv1.ReasonDriftReverted, fmt.Sprintf("node %s ran maxmemory-policy=%q", victim, "volatile-lru"), time.Minute)
	eventually(t, time.Minute, "the hand edit set back", policyIs("allkeys-lru"))
	f.waitCondition(valkeyv1.CondConfigDrift, metav1.ConditionFalse, valkeyv1.ReasonSettingsInSync, "", 2*time.Minute)

	updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) {
		if vc.Annotations == nil {
			vc.Annotations = map[string]string{}
		}
		vc.Annotations[valkeyv1.AnnotationConfigDrift] = valkeyv1.ConfigDriftReport
	})
	handSet("allkeys-random")
	eventually(t, 2*time.Minute, "the drift reported and left", func() error {
		c := f.cluster()
		cond := meta.FindStatusCondition(c.Status.Conditions, valkeyv1.CondConfigDrift)
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != valkeyv1.ReasonSettingsDrifted ||
			!strings.Contains(cond.Message, victim+" (maxmemory-policy)") || !strings.Contains(cond.Message, "left as they are") {
			return fmt.Errorf("ConfigDrift is %+v", cond)
		}
		if v, ok := metricValue("valkey_cluster_config_drift_settings", map[string]string{"namespace": ns, "cluster": key.Name}); !ok || v != 1 {
			return fmt.Errorf("valkey_cluster_config_drift_settings = %v, %v", v, ok)
		}
		return nil
	})
	if err := policyIs("allkeys-random")(); err != nil {
		t.Fatalf("a drift only to be reported was changed: %v", err)
	}

	updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { delete(vc.Annotations, valkeyv1.AnnotationConfigDrift) })
	eventually(t, 2*time.Minute, "the hand edit set back once the annotation is gone", policyIs("allkeys-lru"))
	f.waitCondition(valkeyv1.CondConfigDrift, metav1.ConditionFalse, valkeyv1.ReasonSettingsInSync, "", 2*time.Minute)
	f.assertPodsUntouched(pods)
}

// A node that cannot take a live edit (its process stalled) keeps it
// pending, recorded on its ValkeyNode and in its valkey.conf, and the
// cluster does not read as converged meanwhile; once the node answers
// again the edit is set on it, in place, and only then is the cluster
// converged.
func TestLiveSettingsReachAStalledNodeWhenItResumes(t *testing.T) {
	t.Parallel()
	const ns = "live-stall"
	key := newPlainCluster(t, ns, "cache", 2, 0)
	f := &tlsFixture{t: t, ns: ns, name: key.Name, key: key}
	pods := f.podSnapshot()
	vc := getCluster(t, key)
	victim, other := vc.Status.ShardStatuses[0].Primary, vc.Status.ShardStatuses[1].Primary

	signal(t, key, victim, syscall.SIGSTOP)
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			signal(t, key, victim, syscall.SIGCONT)
		}
	})
	editConfig(t, menuConfigName(ns), func(v map[string]string) { v["maxmemory-policy"] = "allkeys-lru" })
	eventually(t, 2*time.Minute, "the edit taken by "+other+" and pending on "+victim, func() error {
		got, err := runningSettings(ns, other, "maxmemory-policy")
		if err != nil {
			return err
		}
		if got["maxmemory-policy"] != "allkeys-lru" {
			return fmt.Errorf("%s runs %v", other, got)
		}
		var node valkeyv1.ValkeyNode
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: victim}, &node); err != nil {
			return err
		}
		if node.Spec.ValkeySettings["maxmemory-policy"] != "allkeys-lru" ||
			!strings.Contains(node.Annotations[valkeyv1.AnnotationLiveSettingsPending], "maxmemory-policy") {
			return fmt.Errorf("node %s records %v, pending %q", victim, node.Spec.ValkeySettings, node.Annotations[valkeyv1.AnnotationLiveSettingsPending])
		}
		var cm corev1.ConfigMap
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: render.NodeConfigMapName(victim)}, &cm); err != nil {
			return err
		}
		if !strings.Contains(cm.Data["valkey.conf"], "maxmemory-policy allkeys-lru\n") {
			return fmt.Errorf("the valkey.conf of %s lacks the edit", victim)
		}
		return nil
	})
	if p := meta.FindStatusCondition(f.cluster().Status.Conditions, valkeyv1.CondProgressing); p == nil || p.Status != metav1.ConditionTrue {
		t.Fatalf("Progressing while %s has not taken the edit: %+v", victim, p)
	}

	signal(t, key, victim, syscall.SIGCONT)
	resumed = true
	eventually(t, 2*time.Minute, victim+" runs the edit after resuming", func() error {
		got, err := runningSettings(ns, victim, "maxmemory-policy")
		if err != nil {
			return err
		}
		if got["maxmemory-policy"] != "allkeys-lru" {
			return fmt.Errorf("%s runs %v", victim, got)
		}
		return nil
	})
	waitConverged(t, key, 2, 0, 3*time.Minute)
	var node valkeyv1.ValkeyNode
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: victim}, &node); err != nil {
		t.Fatal(err)
	}
	if v, ok := node.Annotations[valkeyv1.AnnotationLiveSettingsPending]; ok {
		t.Fatalf("converged with %q still pending on %s", v, victim)
	}
	// Events of one reason merge into a series that keeps the first note
	// (the other node's), so the victim's shows as the series' second.
	eventually(t, time.Minute, "a SettingsAppliedLive Event for each node", func() error {
		if n := countEvents(t, key, valkeyv1.ReasonSettingsAppliedLive, ""); n < 2 {
			return fmt.Errorf("%d SettingsAppliedLive Events", n)
		}
		return nil
	})
	f.assertPodsUntouched(pods)
}

// A live value the servers refuse is never written where a node starts
// from: a SettingsRefused Warning quotes the server, every running node
// keeps its value and its valkey.conf, and the edit is rolled out as one
// needing a restart would be (the replacement's failing container then
// reports it). Setting the value back brings the cluster to converge on
// its old nodes.
func TestRefusedLiveValueIsNotRecorded(t *testing.T) {
	t.Parallel()
	const ns = "live-refused"
	key := newPlainCluster(t, ns, "cache", 1, 1)
	f := &tlsFixture{t: t, ns: ns, name: key.Name, key: key}
	old := f.podNames()

	editConfig(t, menuConfigName(ns), func(v map[string]string) { v["maxmemory-policy"] = refusedPolicy })
	f.waitEvent(corev1.EventTypeWarning, valkeyv1.ReasonSettingsRefused, refusedPolicy, 2*time.Minute)
	eventually(t, 2*time.Minute, "the edit rolled out instead", func() error {
		for _, p := range f.podNames() {
			if !slices.Contains(old, p) {
				return nil
			}
		}
		return fmt.Errorf("no replacement node yet; pods %v", f.podNames())
	})
	for _, p := range old {
		var cm corev1.ConfigMap
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: render.NodeConfigMapName(p)}, &cm); err != nil {
			continue // a node the roll already retired
		}
		if strings.Contains(cm.Data["valkey.conf"], refusedPolicy) {
			t.Fatalf("the refused value was written into the valkey.conf of %s", p)
		}
		if got, err := runningSettings(ns, p, "maxmemory-policy"); err == nil && got["maxmemory-policy"] != "noeviction" {
			t.Fatalf("%s runs maxmemory-policy %q", p, got["maxmemory-policy"])
		}
	}

	editConfig(t, menuConfigName(ns), func(v map[string]string) { delete(v, "maxmemory-policy") })
	waitConverged(t, key, 1, 1, 5*time.Minute)
}
