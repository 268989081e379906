package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// rolloutFleet is several 1x1 clusters in one namespace on one config,
// each with the keys written before the edit and the nodes it had then.
type rolloutFleet struct {
	keys   []client.ObjectKey
	nodes  map[client.ObjectKey][]string
	before map[client.ObjectKey]map[string]string
}

func newRolloutFleet(t *testing.T, ns, config string, names []string, labels map[string]map[string]string) *rolloutFleet {
	t.Helper()
	f := &rolloutFleet{nodes: map[client.ObjectKey][]string{}, before: map[client.ObjectKey]map[string]string{}}
	for _, name := range names {
		key := createCluster(t, ns, name, config, 1, 1)
		if l := labels[name]; l != nil {
			eventually(t, time.Minute, "labelling "+name, func() error {
				vc := getCluster(t, key)
				vc.Labels = l
				return k8sClient.Update(context.Background(), vc)
			})
		}
		f.keys = append(f.keys, key)
	}
	for _, key := range f.keys {
		vc := waitConverged(t, key, 1, 1, 5*time.Minute)
		f.nodes[key] = slices.Clone(vc.Status.Nodes)
		c := clusterClient(t, seedOf(key), nil)
		f.before[key] = writeKeys(t, c, "before-"+key.Name, 200)
	}
	return f
}

// rolling says whether the cluster is part way through replacing its
// nodes: some are new, some are the ones it had before the edit.
func (f *rolloutFleet) rolling(vc *valkeyv1.ValkeyCluster) bool {
	old := f.nodes[client.ObjectKeyFromObject(vc)]
	var kept, added bool
	for _, n := range vc.Status.Nodes {
		if slices.Contains(old, n) {
			kept = true
		} else {
			added = true
		}
	}
	return kept && added
}

func (f *rolloutFleet) replaced(vc *valkeyv1.ValkeyCluster) bool {
	old := f.nodes[client.ObjectKeyFromObject(vc)]
	return !slices.ContainsFunc(vc.Status.Nodes, func(n string) bool { return slices.Contains(old, n) })
}

func (f *rolloutFleet) checkKeys(t *testing.T) {
	t.Helper()
	for _, key := range f.keys {
		checkAll(t, clusterClient(t, seedOf(key), nil), f.before[key])
	}
}

func progressing(vc *valkeyv1.ValkeyCluster) *metav1.Condition {
	if p := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondProgressing); p != nil {
		return p
	}
	return &metav1.Condition{}
}

// An edit of a config six clusters share, with a rollout limit of two,
// never has more than two of them replacing nodes at once; the others
// say they wait for a slot, naming its holders, and every cluster ends
// with every node replaced and every key.
func TestRolloutLimit(t *testing.T) {
	t.Parallel()
	const ns = "rollout-limit"
	createNamespace(t, ns)
	two := int32(2)
	config := createConfig(t, menuConfigName(ns), "8.0.1", valkeyv1.ValkeyConfigSpec{
		Valkey:  map[string]string{"maxmemory": "64mb"},
		Rollout: &valkeyv1.RolloutPolicy{MaxConcurrentClusters: &two}})
	f := newRolloutFleet(t, ns, config, []string{"a", "b", "c", "d", "e", "f"}, nil)

	ctx := context.Background()
	editConfig(t, config, func(v map[string]string) { v[restartOnlyKey] = restartOnlyValue })
	maxRolling, sawWaiting := 0, ""
	eventually(t, 12*time.Minute, "every cluster's nodes replaced", func() error {
		var rolling, pending []string
		for _, key := range f.keys {
			vc := getCluster(t, key)
			if f.rolling(vc) {
				rolling = append(rolling, key.Name)
			}
			if p := progressing(vc); p.Reason == valkeyv1.ReasonRolloutWaiting && strings.Contains(p.Message, "waiting for rollout slot (2 of 2 in use: ") {
				sawWaiting = p.Message
			}
			if !f.replaced(vc) {
				pending = append(pending, key.Name)
			}
		}
		if len(rolling) > 2 {
			t.Fatalf("%d clusters rolling at once (%v), the limit is 2", len(rolling), rolling)
		}
		maxRolling = max(maxRolling, len(rolling))
		if len(pending) > 0 {
			return fmt.Errorf("not every node replaced yet in %v; rolling now %v", pending, rolling)
		}
		return nil
	})
	for _, key := range f.keys {
		waitConverged(t, key, 1, 1, 5*time.Minute)
	}
	t.Logf("at most %d clusters rolling at once; a waiting cluster said %q", maxRolling, sawWaiting)
	if sawWaiting == "" {
		t.Fatal("no cluster ever reported waiting for a rollout slot with both slots in use")
	}
	f.checkKeys(t)
	eventually(t, time.Minute, "every slot given back", func() error {
		var cfg valkeyv1.ValkeyConfig
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: config}, &cfg); err != nil {
			return err
		}
		if r := cfg.Status.Rollout; r != nil && len(r.Rolling) > 0 {
			return fmt.Errorf("slots still held after every cluster converged: %v", r.Rolling)
		}
		return nil
	})
}

// A canary whose roll cannot complete holds the five other clusters of the
// rollout before they replace a single node, each saying so. The edit is a
// live setting with a value every server refuses: CONFIG SET fails on
// every node of every cluster, so each owes a roll of it, and that roll
// goes through the rollout like any other (the canary's new node reads the
// value at start and exits). Putting the setting back releases the hold
// and every cluster converges with its keys, the others with the very
// nodes they had.
func TestRolloutCanaryHold(t *testing.T) {
	t.Parallel()
	const ns = "rollout-canary"
	createNamespace(t, ns)
	config := createConfig(t, menuConfigName(ns), "8.0.1", valkeyv1.ValkeyConfigSpec{
		Valkey:  map[string]string{"maxmemory": "64mb"},
		Rollout: &valkeyv1.RolloutPolicy{Canary: &metav1.LabelSelector{MatchLabels: map[string]string{"rollout": "canary"}}}})
	f := newRolloutFleet(t, ns, config, []string{"a", "b", "c", "d", "e", "f"}, map[string]map[string]string{"f": {"rollout": "canary"}})
	others := f.keys[:5]
	ctx := context.Background()
	editConfig(t, config, func(v map[string]string) { v["maxmemory-policy"] = refusedPolicy })
	held := fmt.Sprintf("held: canary %s/f failed: ", ns)
	untouched := func() {
		for _, key := range others {
			vc := getCluster(t, key)
			if !slices.Equal(vc.Status.Nodes, f.nodes[key]) {
				t.Fatalf("%s replaced nodes while its canary failed: %v, had %v", key, vc.Status.Nodes, f.nodes[key])
			}
		}
	}
	eventually(t, 5*time.Minute, "the others held by the failed canary", func() error {
		untouched()
		for _, key := range others {
			p := progressing(getCluster(t, key))
			if p.Reason != valkeyv1.ReasonRolloutWaiting || !strings.Contains(p.Message, held) {
				return fmt.Errorf("%s Progressing %s: %s", key, p.Reason, p.Message)
			}
		}
		return nil
	})
	var cfg valkeyv1.ValkeyConfig
	if err := k8sClient.Get(ctx, client.ObjectKey{Name: config}, &cfg); err != nil {
		t.Fatal(err)
	}
	if r := cfg.Status.Rollout; r == nil || r.Hold == nil || !strings.Contains(r.Hold.Message, held) {
		t.Fatalf("config status.rollout has no hold naming the canary: %+v", r)
	}
	t.Logf("%s", cfg.Status.Rollout.Hold.Message)

	for _, key := range others {
		if n := countEvents(t, key, valkeyv1.ReasonSettingsRefused, refusedPolicy); n == 0 {
			t.Fatalf("%s: no %s Event: its nodes were never asked to take the live edit", key, valkeyv1.ReasonSettingsRefused)
		}
	}

	editConfig(t, config, func(v map[string]string) { delete(v, "maxmemory-policy") })
	for _, key := range f.keys {
		waitConverged(t, key, 1, 1, 6*time.Minute)
	}
	untouched()
	f.checkKeys(t)
	eventually(t, time.Minute, "the config's rollout released", func() error {
		var cfg valkeyv1.ValkeyConfig
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: config}, &cfg); err != nil {
			return err
		}
		if r := cfg.Status.Rollout; r != nil && (r.Hold != nil || len(r.Rolling) > 0) {
			return fmt.Errorf("the config's rollout still holds after the fix: hold %+v, rolling %v", r.Hold, r.Rolling)
		}
		return nil
	})
}
