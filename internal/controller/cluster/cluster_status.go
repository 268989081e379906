package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/autoscale"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/render"
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

// applySummary writes the observed shape into status.
func applySummary(vc *valkeyv1.ValkeyCluster, s topology.Summary, nodeNames []string) {
	vc.Status.Shards = int32(s.Shards)
	vc.Status.ReadyNodes = int32(s.ReadyNodes)
	vc.Status.SlotsAssigned = int32(s.SlotsAssigned)
	vc.Status.Nodes = nodeNames
	vc.Status.Selector = labels.SelectorFromSet(render.ClusterSelector(vc.Name)).String()
	vc.Status.ShardStatuses = vc.Status.ShardStatuses[:0]
	for _, sh := range s.Shard {
		vc.Status.ShardStatuses = append(vc.Status.ShardStatuses, valkeyv1.ShardStatus{
			Index:     int32(sh.Index),
			Primary:   sh.Primary,
			Replicas:  sh.Replicas,
			Slots:     topology.FormatRanges(sh.Slots),
			SlotCount: int32(sh.SlotCount),
		})
	}
	vc.Status.Resharding = resharding(vc.Status.Resharding, s)
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

// applyPlan sets state and the Ready/Progressing/Degraded conditions from
// the planner's answer.
func applyPlan(vc *valkeyv1.ValkeyCluster, a topology.Action, state topology.State) {
	// Read before a formed cluster drops its bootstrap snapshot.
	shards, _ := desiredShape(vc)
	vc.Status.State = valkeyv1.ClusterState(state)
	vc.Status.Message = ""
	if state == topology.StateActive && vc.Status.TargetSpec != nil && a.Done() {
		vc.Status.TargetSpec = nil
	}
	ready := a.Done()
	clusterstatus.SetCondition(vc, valkeyv1.CondReady, clusterstatus.BoolStatus(ready), readyReason(ready, state, a), readyMessage(vc, a))
	progressing := !a.Done()
	msg := "cluster matches its spec"
	reason := valkeyv1.ReasonConverged
	if progressing {
		reason = actionReason(a)
		msg = describe(a)
	}
	clusterstatus.SetCondition(vc, valkeyv1.CondProgressing, clusterstatus.BoolStatus(progressing), reason, msg)
	dstatus, dreason, dmsg := degraded(state, a, int(vc.Status.Shards), shards)
	clusterstatus.SetCondition(vc, valkeyv1.CondDegraded, dstatus, dreason, dmsg)
}

// degraded is the Degraded condition for the planner's answer, given how
// many of the wanted shards have a slot-holding primary. Only a repair
// makes it True. While bootstrap runs nothing has failed, but shards are
// still without a primary or replicas, so it must not claim they are all
// healthy: that is what a user reads first on a cluster that never formed.
func degraded(state topology.State, a topology.Action, primaries, shards int) (metav1.ConditionStatus, string, string) {
	switch {
	case a.Tier == topology.TierStability:
		return metav1.ConditionTrue, actionReason(a), describe(a)
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

func readyMessage(vc *valkeyv1.ValkeyCluster, a topology.Action) string {
	if a.Done() {
		return fmt.Sprintf("%d shards serving all %d slots", vc.Status.Shards, topology.TotalSlots)
	}
	return describe(a)
}

// describe is an action as one human sentence for conditions and Events.
func describe(a topology.Action) string {
	parts := []string{}
	if a.Reason != "" {
		parts = append(parts, a.Reason)
	}
	if a.Detail != "" {
		parts = append(parts, a.Detail)
	}
	if len(parts) == 0 {
		return a.String()
	}
	return strings.Join(parts, ": ")
}

// report writes what the plan and the pods mean into the status and
// Events.
func (r *Reconciler) report(ctx context.Context, s *clusterScope) (phaseResult, error) {
	vc := s.vc
	r.reportContainerFailures(vc, s.failures, s.held)
	r.reportVersions(vc, s.res, s.versionReason, s.versionMismatch)
	lead := s.wave.Lead()
	applySummary(vc, topology.Summarize(s.in), s.o.names())
	if p := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondProgressing); lead.Cause == topology.CauseScaleInNoHeadroom &&
		(p == nil || p.Reason != valkeyv1.ReasonInsufficientMemory) {
		// Once per hold: the figures in the message move with every write.
		r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, valkeyv1.ReasonInsufficientMemory, "ScaleIn", "%s", describe(lead))
	}
	applyPlan(vc, lead, decideState(s.creating, lead, s.o))
	if lead.Done() && len(s.live.applying) > 0 {
		clusterstatus.SetCondition(vc, valkeyv1.CondProgressing, metav1.ConditionTrue, valkeyv1.ReasonApplyingSettings,
			clusterstatus.Truncate("applying live settings without a restart; not yet taken by "+strings.Join(s.live.applying, "; "), 2000))
	}
	applyRestoreGate(vc, lead)
	if s.aclHeld && lead.Done() {
		markSpecHeld(vc)
	}
	if f := s.tls.Failure; f != nil {
		// The plan's conditions say what heals; the state stays Invalid.
		// reconcileTLS announced the failure against the status as read:
		// announcing it again here, after applyPlan, would repeat the
		// Warning on every reconcile for as long as it lasts.
		markInvalid(vc, f.Reason, f.Message)
	}
	return nextPhase, nil
}

// markSpecHeld keeps a cluster whose references do not resolve from
// reading as converged: the nodes run the last rendering that resolved,
// not what the spec now asks for.
func markSpecHeld(vc *valkeyv1.ValkeyCluster) {
	why := "the spec's references do not resolve"
	if c := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondReferencesResolved); c != nil {
		why = c.Message
	}
	msg := "the spec is not fully applied: " + why + "; the nodes keep the last configuration that resolved"
	clusterstatus.SetCondition(vc, valkeyv1.CondReady, metav1.ConditionFalse, valkeyv1.ReasonReferencesUnresolved, msg)
	clusterstatus.SetCondition(vc, valkeyv1.CondProgressing, metav1.ConditionFalse, valkeyv1.ReasonReferencesUnresolved, msg)
}

// setInvalid records a TLS validation failure: the state, the exact message
// and an Event when the cluster was not already Invalid for that reason.
func (r *Reconciler) setInvalid(ctx context.Context, vc *valkeyv1.ValkeyCluster, reason, message string) {
	if vc.Status.State != valkeyv1.StateInvalid || vc.Status.Message != message {
		clusterstatus.LogFrom(ctx).Info("TLS Secret validation failed, setting cluster Invalid", "reason", reason, "message", message)
		r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, reason, "ValidateTLS", "%s", message)
	}
	markInvalid(vc, reason, message)
}

// markInvalid writes a TLS failure into the state and conditions.
func markInvalid(vc *valkeyv1.ValkeyCluster, reason, message string) {
	vc.Status.State = valkeyv1.StateInvalid
	vc.Status.Message = message
	clusterstatus.SetCondition(vc, valkeyv1.CondTLSValid, metav1.ConditionFalse, reason, message)
	clusterstatus.SetCondition(vc, valkeyv1.CondReady, metav1.ConditionFalse, valkeyv1.ReasonInvalid, message)
}

// noteStateChange records a state transition, once it is written, as an
// Event and a log line, so `kubectl get events` tells the cluster's story.
func (r *Reconciler) noteStateChange(ctx context.Context, from valkeyv1.ClusterState, vc *valkeyv1.ValkeyCluster) {
	to := vc.Status.State
	if from == to || from == "" {
		return
	}
	why := vc.Status.Message
	if p := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondProgressing); why == "" && p != nil {
		why = p.Message
	}
	eventType := corev1.EventTypeNormal
	if to == valkeyv1.StateInvalid {
		eventType = corev1.EventTypeWarning
	}
	clusterstatus.LogFrom(ctx).Info("state changed", "from", from, "to", to, "why", why)
	r.Recorder.Eventf(vc, nil, eventType, valkeyv1.ReasonStateChanged, "UpdateState", "%s -> %s: %s", from, to, clusterstatus.Truncate(why, 900))
}

// noteUnreachable keeps nodes the operator could not ask visible in status.
func (r *Reconciler) noteUnreachable(vc *valkeyv1.ValkeyCluster, o *observed) {
	if len(o.unreachable) == 0 {
		return
	}
	names := slices.Sorted(maps.Keys(o.unreachable))
	first := o.unreachable[names[0]]
	clusterstatus.SetCondition(vc, valkeyv1.CondProgressing, metav1.ConditionTrue, valkeyv1.ReasonUnreachable,
		fmt.Sprintf("cannot reach %d node(s) %v: %v", len(names), names, first))
}
