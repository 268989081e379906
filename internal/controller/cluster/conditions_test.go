package cluster

import (
	"testing"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

func TestActionReason(t *testing.T) {
	wait := func(c topology.WaitCause, reason string) topology.Action {
		return topology.Action{Kind: topology.KindWait, Cause: c, Reason: reason}
	}
	tests := []struct {
		name string
		a    topology.Action
		want string
	}{
		{"an action is named by its kind", topology.Action{Kind: topology.KindFailover, Reason: topology.ReasonRollFailover}, "Failover"},
		{"a pod the scheduler cannot place", wait(topology.CausePodUnschedulable, topology.ReasonPodUnschedulable), valkeyv1.ReasonPodUnschedulable},
		{"bootstrap blocked on scheduling", wait(topology.CausePodUnschedulable, topology.ReasonUnschedulable), valkeyv1.ReasonPodUnschedulable},
		{"a pod not running yet", wait(topology.CausePodPending, topology.ReasonPodPending), valkeyv1.ReasonPodPending},
		{"a node that does not answer", wait(topology.CauseNodeSilent, topology.ReasonNodeSilent), valkeyv1.ReasonUnreachable},
		{"Valkey's own failover awaited", wait(topology.CauseAutoFailover, topology.ReasonWaitAutoFailover), valkeyv1.ReasonAwaitingAutoFailover},
		{"a requested failover awaited", wait(topology.CauseFailoverInFlight, topology.ReasonFailoverInFlight), valkeyv1.ReasonFailoverInProgress},
		{"any other wait", wait(topology.CauseNone, "waiting for shard to settle"), "Wait"},
		{"the cause decides, not the wording", wait(topology.CausePodPending, "a reworded sentence"), valkeyv1.ReasonPodPending},
		{"a named sentence without its cause is no named wait", wait(topology.CauseNone, topology.ReasonPodPending), "Wait"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := actionReason(tt.a); got != tt.want {
				t.Errorf("actionReason = %q, want %q", got, tt.want)
			}
		})
	}
}

// A cause the planner or the reconciler can give a wait but status cannot
// name would show as the bare kind Wait: every cause maps to an API reason.
func TestEveryWaitCauseHasAReason(t *testing.T) {
	causes := topology.WaitCauses()
	if len(causes) == 0 {
		t.Fatal("topology lists no wait causes")
	}
	for _, c := range causes {
		if causeReasons[c] == "" {
			t.Errorf("wait cause %s maps to no condition reason", c)
		}
	}
	if r, ok := causeReasons[topology.CauseNone]; ok {
		t.Errorf("CauseNone maps to %q; a wait without a cause is reason Wait", r)
	}
	if len(causeReasons) != len(causes) {
		t.Errorf("%d causes mapped, topology lists %d", len(causeReasons), len(causes))
	}
}
