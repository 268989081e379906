package controller

import (
	"testing"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

func TestHealingOnly(t *testing.T) {
	takeover := topology.Action{Kind: topology.KindFailover, Tier: topology.TierStability, Reason: topology.ReasonTakeover,
		Failover: &topology.Failover{Node: "n4", Mode: topology.FailoverTakeover}}
	rollFailover := topology.Action{Kind: topology.KindFailover, Tier: topology.TierUpdate, Reason: topology.ReasonRollFailover,
		Failover: &topology.Failover{Node: "n4"}}
	create := topology.Action{Kind: topology.KindCreateNode, Tier: topology.TierStability, Reason: "restoring replica count",
		CreateNode: &topology.CreateNode{ShardIndex: 1, JoinType: topology.JoinReplica}}
	forget := topology.Action{Kind: topology.KindForget, Tier: topology.TierStability, Reason: "forgetting departed node",
		Forget: &topology.Forget{NodeID: "x"}}
	wait := topology.Action{Kind: topology.KindWait, Tier: topology.TierStability, Reason: topology.ReasonWaitAutoFailover}
	done := topology.Action{Kind: topology.KindDone, Tier: topology.TierSteady, Reason: "cluster converged"}

	tests := []struct {
		name string
		in   []topology.Action
		want string
	}{
		{"a takeover over a lost primary goes ahead", []topology.Action{takeover}, takeover.String()},
		{"a roll's failover waits", []topology.Action{rollFailover},
			"Wait (" + heldForTLS + ": Failover (" + topology.ReasonRollFailover + "))"},
		{"new members wait", []topology.Action{create, create},
			"Wait (" + heldForTLS + ": CreateNode (restoring replica count))"},
		{"forgets wait", []topology.Action{forget}, "Wait (" + heldForTLS + ": Forget (forgetting departed node))"},
		{"a wait is kept as it is", []topology.Action{wait}, wait.String()},
		{"done is kept as it is", []topology.Action{done}, done.String()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := healingOnly(topology.Wave{Actions: tt.in})
			if got.String() != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if r := actionReason(got.Lead()); got.Lead().Reason == heldForTLS && r != valkeyv1.ReasonHeldForTLS {
				t.Errorf("condition reason %s, want %s", r, valkeyv1.ReasonHeldForTLS)
			}
		})
	}
}
