package cluster

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

func TestDecideRollout(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	earlier := metav1.NewTime(now.Add(-time.Minute))
	slot := func(key string) valkeyv1.RolloutSlot {
		return valkeyv1.RolloutSlot{Cluster: key, Since: earlier, Generation: 4}
	}
	owes := func(key string) rolloutCluster { return rolloutCluster{Key: key, Owes: true} }
	done := func(key string) rolloutCluster { return rolloutCluster{Key: key} }
	canary := func(c rolloutCluster) rolloutCluster { c.Canary = true; return c }
	failed := func(c rolloutCluster, msg string) rolloutCluster { c.Failed = msg; return c }

	for _, tc := range []struct {
		name        string
		in          rolloutInput
		wantRolling []string
		wantHold    string
		want        map[string]rolloutVerdict
	}{{
		name:        "a free slot goes to the deciding cluster",
		in:          rolloutInput{Self: "ns/a", Max: 2, Clusters: []rolloutCluster{owes("ns/a"), owes("ns/b")}},
		wantRolling: []string{"ns/a"},
		want:        map[string]rolloutVerdict{"ns/a": {Roll: true}, "ns/b": {Roll: true}},
	}, {
		name: "every slot taken: wait, naming the holders",
		in: rolloutInput{Self: "ns/c", Max: 2, Status: valkeyv1.RolloutStatus{Rolling: []valkeyv1.RolloutSlot{slot("ns/a"), slot("ns/b")}},
			Clusters: []rolloutCluster{owes("ns/a"), owes("ns/b"), owes("ns/c")}},
		wantRolling: []string{"ns/a", "ns/b"},
		want: map[string]rolloutVerdict{"ns/a": {Roll: true}, "ns/b": {Roll: true},
			"ns/c": {Message: "waiting for rollout slot (2 of 2 in use: ns/a, ns/b)"}},
	}, {
		name: "a holder with no outdated node left gives its slot back",
		in: rolloutInput{Self: "ns/a", Max: 1, Status: valkeyv1.RolloutStatus{Rolling: []valkeyv1.RolloutSlot{slot("ns/a")}},
			Clusters: []rolloutCluster{done("ns/a"), owes("ns/b")}},
		wantRolling: nil,
		want:        map[string]rolloutVerdict{"ns/a": {Roll: true}, "ns/b": {Roll: true}},
	}, {
		name: "another holder's slot is kept on a lagging view of it, dropped once it no longer uses the object",
		in: rolloutInput{Self: "ns/c", Max: 2, Status: valkeyv1.RolloutStatus{Rolling: []valkeyv1.RolloutSlot{slot("ns/a"), slot("ns/gone")}},
			Clusters: []rolloutCluster{done("ns/a"), owes("ns/c")}},
		wantRolling: []string{"ns/a", "ns/c"},
		want:        map[string]rolloutVerdict{"ns/a": {Roll: true}, "ns/c": {Roll: true}},
	}, {
		name: "canaries go first",
		in: rolloutInput{Self: "ns/b", Max: 3, Generation: 4,
			Clusters: []rolloutCluster{canary(owes("ns/c")), owes("ns/b")}},
		wantRolling: nil,
		want:        map[string]rolloutVerdict{"ns/c": {Roll: true}, "ns/b": {Message: "waiting for canary ns/c"}},
	}, {
		name: "a canary that finished lets the others go",
		in: rolloutInput{Self: "ns/b", Max: 3, Generation: 4,
			Clusters: []rolloutCluster{canary(done("ns/c")), owes("ns/b")}},
		wantRolling: []string{"ns/b"},
		want:        map[string]rolloutVerdict{"ns/c": {Roll: true}, "ns/b": {Roll: true}},
	}, {
		name: "a failed canary holds the rest",
		in: rolloutInput{Self: "ns/b", Max: 3, Generation: 4, Status: valkeyv1.RolloutStatus{Rolling: []valkeyv1.RolloutSlot{slot("ns/c")}},
			Clusters: []rolloutCluster{failed(canary(owes("ns/c")), "CreateNode: boom"), owes("ns/b")}},
		wantRolling: []string{"ns/c"},
		wantHold:    "held: canary ns/c failed: CreateNode: boom",
		want:        map[string]rolloutVerdict{"ns/c": {Roll: true}, "ns/b": {Message: "held: canary ns/c failed: CreateNode: boom"}},
	}, {
		name: "a failure of a slot taken for an earlier generation holds nobody: the fix goes ahead",
		in: rolloutInput{Self: "ns/b", Max: 3, Generation: 5, Status: valkeyv1.RolloutStatus{Rolling: []valkeyv1.RolloutSlot{slot("ns/c")}},
			Clusters: []rolloutCluster{failed(canary(owes("ns/c")), "ContainerExited: x"), done("ns/b")}},
		wantRolling: []string{"ns/c"},
		want:        map[string]rolloutVerdict{"ns/c": {Roll: true}, "ns/b": {Roll: true}},
	}, {
		name: "a hold outlives the failure until released",
		in: rolloutInput{Self: "ns/b", Max: 3, Generation: 4, Status: valkeyv1.RolloutStatus{Hold: &valkeyv1.RolloutHold{Generation: 4, Message: "held: ns/a failed: x"}},
			Clusters: []rolloutCluster{done("ns/a"), owes("ns/b")}},
		wantHold: "held: ns/a failed: x",
		want:     map[string]rolloutVerdict{"ns/a": {Roll: true}, "ns/b": {Message: "held: ns/a failed: x"}},
	}, {
		name: "a spec edit releases the hold",
		in: rolloutInput{Self: "ns/b", Max: 3, Generation: 5, Status: valkeyv1.RolloutStatus{Hold: &valkeyv1.RolloutHold{Generation: 4, Message: "held: ns/a failed: x"}},
			Clusters: []rolloutCluster{done("ns/a"), owes("ns/b")}},
		wantRolling: []string{"ns/b"},
		want:        map[string]rolloutVerdict{"ns/a": {Roll: true}, "ns/b": {Roll: true}},
	}, {
		name: "the annotation releases the hold for good on this generation, and past unfinished canaries",
		in: rolloutInput{Self: "ns/b", Max: 3, Generation: 4, Release: true,
			Status:   valkeyv1.RolloutStatus{Rolling: []valkeyv1.RolloutSlot{slot("ns/c")}, Hold: &valkeyv1.RolloutHold{Generation: 4, Message: "held"}},
			Clusters: []rolloutCluster{failed(canary(owes("ns/c")), "still failing"), owes("ns/b")}},
		wantRolling: []string{"ns/c", "ns/b"},
		want:        map[string]rolloutVerdict{"ns/c": {Roll: true}, "ns/b": {Roll: true}},
	}, {
		name: "data lost before the slot was taken is not this roll's",
		in: rolloutInput{Self: "ns/b", Max: 1, Generation: 4, Status: valkeyv1.RolloutStatus{Rolling: []valkeyv1.RolloutSlot{slot("ns/a")}},
			Clusters: []rolloutCluster{{Key: "ns/a", Owes: true, DataLost: "old", DataLostAt: now.Add(-time.Hour)}, owes("ns/b")}},
		wantRolling: []string{"ns/a"},
		want:        map[string]rolloutVerdict{"ns/a": {Roll: true}, "ns/b": {Message: "waiting for rollout slot (1 of 1 in use: ns/a)"}},
	}, {
		name: "data lost during the roll holds the rest",
		in: rolloutInput{Self: "ns/b", Max: 1, Generation: 4, Status: valkeyv1.RolloutStatus{Rolling: []valkeyv1.RolloutSlot{slot("ns/a")}},
			Clusters: []rolloutCluster{{Key: "ns/a", Owes: true, DataLost: "shard 0", DataLostAt: now}, owes("ns/b")}},
		wantRolling: []string{"ns/a"},
		wantHold:    "held: ns/a lost data: shard 0",
		want:        map[string]rolloutVerdict{"ns/a": {Roll: true}, "ns/b": {Message: "held: ns/a lost data: shard 0"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now = now
			st, got := decideRollout(tc.in)
			var rolling []string
			for _, s := range st.Rolling {
				rolling = append(rolling, s.Cluster)
			}
			if !slices.Equal(rolling, tc.wantRolling) {
				t.Errorf("rolling = %v, want %v", rolling, tc.wantRolling)
			}
			hold := ""
			if st.Hold != nil {
				hold = st.Hold.Message
			}
			if hold != tc.wantHold {
				t.Errorf("hold = %q, want %q", hold, tc.wantHold)
			}
			for k, want := range tc.want {
				if got[k] != want {
					t.Errorf("%s: %+v, want %+v", k, got[k], want)
				}
			}
		})
	}
}
