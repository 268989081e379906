package controller

import (
	"testing"
	"time"

	"github.com/gomomento/valkey-operator/internal/topology"
)

func TestAfterWait(t *testing.T) {
	const pending = 2 * time.Second
	tests := []struct {
		name string
		lead topology.Action
		want time.Duration
	}{
		{"gossip during a bootstrap is looked at again soon",
			topology.Action{Kind: topology.KindWait, Tier: topology.TierBootstrap, Reason: "waiting for nodes to learn each other"}, afterStep},
		{"a migration under way is looked at again soon",
			topology.Action{Kind: topology.KindWait, Tier: topology.TierTopology, Reason: "slot migration in progress"}, afterStep},
		{"a pod not scheduled waits the pending interval",
			topology.Action{Kind: topology.KindWait, Tier: topology.TierBootstrap, Cause: topology.CausePodUnschedulable}, pending},
		{"a node that does not answer waits the pending interval",
			topology.Action{Kind: topology.KindWait, Tier: topology.TierStability, Cause: topology.CauseNodeSilent}, pending},
		{"a converged-looking cluster settling waits the pending interval",
			topology.Action{Kind: topology.KindWait, Tier: topology.TierSteady, Reason: "waiting for the cluster to settle"}, pending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := afterWait(tt.lead, pending); got != tt.want {
				t.Errorf("afterWait = %s, want %s", got, tt.want)
			}
		})
	}
	if got := afterWait(topology.Action{Kind: topology.KindWait, Tier: topology.TierBootstrap}, 100*time.Millisecond); got != 100*time.Millisecond {
		t.Errorf("a pending interval shorter than a step's is kept: got %s", got)
	}
}
