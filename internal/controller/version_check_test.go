package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/resolve"
	"github.com/gomomento/valkey-operator/internal/topology"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

func TestVersionMismatch(t *testing.T) {
	node := func(name, image string) *valkeyv1.ValkeyNode {
		return &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: valkeyv1.ValkeyNodeSpec{Image: image}}
	}
	v := func(s string) valkey.Version {
		out, err := valkey.ParseVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	res := &resolve.Result{ImageName: "valkey-9", Image: "valkey/valkey:9.1.2", Version: "8.0.1"}
	nodes := map[string]*valkeyv1.ValkeyNode{
		"old-a": node("old-a", "valkey/valkey:8.0.1"),
		"new-b": node("new-b", "valkey/valkey:9.1.2"),
		"new-c": node("new-c", "valkey/valkey:9.1.2"),
	}
	tests := []struct {
		name     string
		res      *resolve.Result
		versions map[string]valkey.Version
		want     string
	}{
		{"no node of the image answers yet", res, map[string]valkey.Version{"old-a": v("8.0.1")}, ""},
		{"a new node runs what its image declares", &resolve.Result{ImageName: "valkey-9", Image: "valkey/valkey:9.1.2", Version: "9.1.2"},
			map[string]valkey.Version{"old-a": v("8.0.1"), "new-b": v("9.1.2")}, ""},
		{"the first new node to answer runs another version", res,
			map[string]valkey.Version{"old-a": v("8.0.1"), "new-b": v("9.1.2")},
			"ValkeyImage valkey-9 (valkey/valkey:9.1.2) declares Valkey 8.0.1, but node new-b runs 9.1.2; no node is created until they agree"},
		{"every new node is named, sorted", res,
			map[string]valkey.Version{"new-c": v("9.1.2"), "new-b": v("9.1.2")},
			"ValkeyImage valkey-9 (valkey/valkey:9.1.2) declares Valkey 8.0.1, but node new-b runs 9.1.2, node new-c runs 9.1.2; no node is created until they agree"},
		{"an old node is not judged by the new image", &resolve.Result{ImageName: "valkey-8", Image: "valkey/valkey:8.0.1", Version: "8.0.2"},
			map[string]valkey.Version{"new-b": v("9.1.2")}, ""},
		{"a version a node answers for a node no longer listed", res, map[string]valkey.Version{"gone": v("9.1.2")}, ""},
		{"no resolved image", nil, map[string]valkey.Version{"new-b": v("9.1.2")}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionMismatch(nodes, tc.versions, tc.res); got != tc.want {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestHoldForVersion(t *testing.T) {
	create := topology.Action{Kind: topology.KindCreateNode, Tier: topology.TierUpdate, CreateNode: &topology.CreateNode{ShardIndex: 0}}
	repairCreate := topology.Action{Kind: topology.KindCreateNode, Tier: topology.TierStability, CreateNode: &topology.CreateNode{ShardIndex: 1}}
	failover := topology.Action{Kind: topology.KindFailover, Tier: topology.TierUpdate, Failover: &topology.Failover{}}
	forget := topology.Action{Kind: topology.KindForget, Tier: topology.TierStability, Forget: &topology.Forget{}}
	tests := []struct {
		name     string
		wave     []topology.Action
		mismatch string
		kinds    []topology.Kind
		acts     bool
	}{
		{"nothing is held without a mismatch", []topology.Action{create, failover}, "", []topology.Kind{topology.KindCreateNode, topology.KindFailover}, true},
		{"a roll's steps and creations wait", []topology.Action{create, failover}, "off", []topology.Kind{topology.KindWait}, false},
		{"a repair's creation waits too", []topology.Action{repairCreate}, "off", []topology.Kind{topology.KindWait}, false},
		{"other repairs go on", []topology.Action{forget, create}, "off", []topology.Kind{topology.KindForget}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := holdForVersion(topology.Wave{Actions: tc.wave}, tc.mismatch)
			var kinds []topology.Kind
			for _, a := range got.Actions {
				kinds = append(kinds, a.Kind)
			}
			if len(kinds) != len(tc.kinds) || got.Acts() != tc.acts {
				t.Fatalf("wave %s (acts %v), want kinds %v (acts %v)", got, got.Acts(), tc.kinds, tc.acts)
			}
			for i := range kinds {
				if kinds[i] != tc.kinds[i] {
					t.Fatalf("wave %s, want kinds %v", got, tc.kinds)
				}
			}
			if !tc.acts && (got.Lead().Detail != tc.mismatch || got.Lead().Reason != reasonVersionHold || got.Lead().Tier != tc.wave[0].Tier) {
				t.Fatalf("the wait %+v, want reason %q, detail %q and tier %s", got.Lead(), reasonVersionHold, tc.mismatch, tc.wave[0].Tier)
			}
		})
	}
}
