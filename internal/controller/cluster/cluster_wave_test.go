package cluster

import (
	"testing"
	"time"

	"github.com/gomomento/valkey-operator/internal/topology"
)

func TestAfterWait(t *testing.T) {
	const pending, steady = 2 * time.Second, 30 * time.Second
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
		{"a paused cluster waits the steady interval",
			topology.Action{Kind: topology.KindWait, Tier: topology.TierTopology, Cause: topology.CausePaused}, steady},
		{"a converged-looking cluster settling waits the pending interval",
			topology.Action{Kind: topology.KindWait, Tier: topology.TierSteady, Reason: "waiting for the cluster to settle"}, pending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := afterWait(tt.lead, pending, steady); got != tt.want {
				t.Errorf("afterWait = %s, want %s", got, tt.want)
			}
		})
	}
	if got := afterWait(topology.Action{Kind: topology.KindWait, Tier: topology.TierBootstrap}, 100*time.Millisecond, steady); got != 100*time.Millisecond {
		t.Errorf("a pending interval shorter than a step's is kept: got %s", got)
	}
}

// A wait gets a log line of its own by its cause and tier, whatever its
// sentence says.
func TestLoggedWait(t *testing.T) {
	wait := func(tier topology.Tier, c topology.WaitCause, reason string) topology.Action {
		return topology.Action{Kind: topology.KindWait, Tier: tier, Cause: c, Reason: reason}
	}
	tests := []struct {
		name string
		lead topology.Action
		want bool
	}{
		{"a bootstrap the scheduler blocks", wait(topology.TierBootstrap, topology.CausePodUnschedulable, "reworded"), true},
		{"Valkey's own failover awaited", wait(topology.TierStability, topology.CauseAutoFailover, "reworded"), true},
		{"a formed cluster's unscheduled replacement shows in status only", wait(topology.TierStability, topology.CausePodUnschedulable, topology.ReasonPodUnschedulable), false},
		{"the sentence without its cause", wait(topology.TierStability, topology.CauseNone, topology.ReasonWaitAutoFailover), false},
		{"a step of a procedure", wait(topology.TierBootstrap, topology.CauseNone, "waiting for nodes to learn each other"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := loggedWait(tt.lead); got != tt.want {
				t.Errorf("loggedWait = %v, want %v", got, tt.want)
			}
		})
	}
}
