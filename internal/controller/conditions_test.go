package controller

import (
	"testing"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

func TestActionReason(t *testing.T) {
	tests := []struct {
		name string
		a    topology.Action
		want string
	}{
		{"an action is named by its kind", topology.Action{Kind: topology.KindFailover, Reason: topology.ReasonRollFailover}, "Failover"},
		{"a pod the scheduler cannot place", topology.Action{Kind: topology.KindWait, Reason: topology.ReasonPodUnschedulable}, valkeyv1.ReasonPodUnschedulable},
		{"bootstrap blocked on scheduling", topology.Action{Kind: topology.KindWait, Reason: topology.ReasonUnschedulable}, valkeyv1.ReasonPodUnschedulable},
		{"a pod not running yet", topology.Action{Kind: topology.KindWait, Reason: topology.ReasonPodPending}, valkeyv1.ReasonPodPending},
		{"a node that does not answer", topology.Action{Kind: topology.KindWait, Reason: topology.ReasonNodeSilent}, valkeyv1.ReasonUnreachable},
		{"Valkey's own failover awaited", topology.Action{Kind: topology.KindWait, Reason: topology.ReasonWaitAutoFailover}, valkeyv1.ReasonAwaitingAutoFailover},
		{"a requested failover awaited", topology.Action{Kind: topology.KindWait, Reason: topology.ReasonFailoverInFlight}, valkeyv1.ReasonFailoverInProgress},
		{"any other wait", topology.Action{Kind: topology.KindWait, Reason: "waiting for shard to settle"}, "Wait"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := actionReason(tt.a); got != tt.want {
				t.Errorf("actionReason = %q, want %q", got, tt.want)
			}
		})
	}
}
