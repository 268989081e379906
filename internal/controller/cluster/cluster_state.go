package cluster

import (
	"fmt"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/autoscale"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// formed says whether the cluster has ever reached Active: bootstrap keeps
// status.targetSpec until then, so a cluster that goes Invalid mid-creation
// resumes bootstrap and a formed one returns to Active.
func formed(vc *valkeyv1.ValkeyCluster) bool {
	return vc.Status.State != "" && vc.Status.TargetSpec == nil
}

// desiredShape is the topology bootstrap builds (the snapshot while
// Creating, so edits made meanwhile are applied once Active) or the live
// spec, whose shard count is the autoscaler's while autoscaling is set.
func desiredShape(vc *valkeyv1.ValkeyCluster) (shards, replicas int) {
	if t := vc.Status.TargetSpec; t != nil {
		return int(t.Shards), int(t.ReplicasPerShard)
	}
	return int(autoscale.ShardTarget(vc)), int(vc.Spec.ReplicasPerShard)
}

// resharding is the progress of slot moves from the summary, keeping the
// total the change began with so moved/total reads as progress.
func resharding(prev *valkeyv1.ReshardingStatus, s topology.Summary) *valkeyv1.ReshardingStatus {
	if s.SlotsToMove == 0 && len(s.Moving) == 0 {
		return nil
	}
	out := &valkeyv1.ReshardingStatus{SlotsToMove: int32(s.SlotsToMove), SlotsTotal: int32(s.SlotsToMove)}
	if prev != nil && prev.SlotsTotal > out.SlotsTotal {
		out.SlotsTotal = prev.SlotsTotal
	}
	out.Progress = fmt.Sprintf("%d/%d slots", out.SlotsTotal-out.SlotsToMove, out.SlotsTotal)
	for _, m := range s.Moving {
		out.Moving = append(out.Moving, valkeyv1.SlotMove{Source: m.From, Target: m.To, Slots: topology.FormatRanges(m.Slots),
			SlotCount: int32(topology.CountSlots(m.Slots)), Method: string(m.Method)})
	}
	return out
}

// decideState is the planner's state for the lead action, except that a
// cluster owing a roll is never Active until it is done: whatever the
// planner does first (repairing a lost member, a replacement held back
// after crashing), the nodes do not run what the spec asks for. Nor is a
// cluster whose persistent members are on their way back (see
// topology.Returning): their nodes may say cluster_state:ok for a few
// seconds while none reaches another.
func decideState(creating bool, lead topology.Action, o *observed) topology.State {
	state := topology.DecideState(creating, lead)
	if state == topology.StateActive && !lead.Done() &&
		(o.anyOutdated() || topology.Returning(topology.Input{Members: o.members})) {
		return topology.StateUpdating
	}
	return state
}

// degraded is the Degraded condition for the planner's answer, given how
// many of the wanted shards have a slot-holding primary. Only a repair
// makes it True. While bootstrap runs nothing has failed, but shards are
// still without a primary or replicas, so it must not claim they are all
// healthy: that is what a user reads first on a cluster that never formed.
func degraded(state topology.State, a topology.Action, primaries, shards int) (metav1.ConditionStatus, string, string) {
	switch {
	case a.Tier == topology.TierStability:
		return metav1.ConditionTrue, actionReason(a), a.Describe()
	case state == topology.StateCreating:
		return metav1.ConditionFalse, valkeyv1.ReasonBootstrapping,
			fmt.Sprintf("bootstrap in progress: %d of %d shards have a primary serving slots; nothing has failed", primaries, shards)
	}
	return metav1.ConditionFalse, valkeyv1.ReasonHealthy, "every shard has a healthy primary and its replicas"
}

// readyReason names why a cluster is not ready: bootstrapping only while
// it is being created, else what the planner is doing about it (a formed
// cluster waiting for a pod is not bootstrapping).
func readyReason(ready bool, state topology.State, a topology.Action) string {
	switch {
	case ready:
		return valkeyv1.ReasonFormed
	case state == topology.StateCreating:
		return valkeyv1.ReasonBootstrapping
	}
	return actionReason(a)
}

// unreachableMessage names the nodes the operator could not ask, "" when
// it reached every one.
func unreachableMessage(o *observed) string {
	if len(o.unreachable) == 0 {
		return ""
	}
	names := slices.Sorted(maps.Keys(o.unreachable))
	return fmt.Sprintf("cannot reach %d node(s) %v: %v", len(names), names, o.unreachable[names[0]])
}
