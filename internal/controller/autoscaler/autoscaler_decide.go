package autoscaler

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/autoscale"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/controller/metrics"
	"github.com/gomomento/valkey-operator/internal/textutil"
)

// evaluate decides for a cluster with spec.autoscaling, and clears what an
// earlier decision left for one without.
func (r *autoscaler) evaluate(ctx context.Context, key types.NamespacedName, nodes []*valkeyv1.ValkeyNode) error {
	var (
		decision autoscale.Decision
		notes    []autoscaleNote
	)
	err := clusterstatus.Update(ctx, r.Client, r.APIReader, key, func(vc *valkeyv1.ValkeyCluster) bool {
		decision, notes = applyAutoscaling(vc, nodes, time.Now())
		return true
	})
	if err != nil {
		return fmt.Errorf("writing autoscaling status: %w", err)
	}
	vc := &valkeyv1.ValkeyCluster{}
	vc.Namespace, vc.Name = key.Namespace, key.Name
	if err := r.Get(ctx, key, vc); err != nil {
		return client.IgnoreNotFound(err)
	}
	for _, n := range notes {
		r.Recorder.Eventf(vc, nil, n.eventType, n.reason, "Autoscale", "%s", n.message)
	}
	if decision.Scales() {
		logf.FromContext(ctx).Info("autoscaling decision", "decision", decision.Direction, "from", decision.From, "to", decision.To, "why", decision.Message)
		metrics.AutoscalingDecisions.WithLabelValues(key.Namespace, key.Name, string(decision.Direction)).Inc()
	}
	if vc.Spec.Autoscaling != nil && vc.Status.Autoscaling != nil {
		metrics.AutoscalingDesiredShards.WithLabelValues(key.Namespace, key.Name).Set(float64(vc.Status.Autoscaling.DesiredShards))
	} else {
		forgetAutoscalingMetrics(key.Namespace, key.Name)
	}
	return nil
}

// autoscaleNote is an Event to emit once the status that caused it is written.
type autoscaleNote struct {
	eventType, reason, message string
}

// applyAutoscaling is the status side of one evaluation: the decision, the
// Autoscaling condition, and the Events they call for.
func applyAutoscaling(vc *valkeyv1.ValkeyCluster, nodes []*valkeyv1.ValkeyNode, now time.Time) (autoscale.Decision, []autoscaleNote) {
	a := vc.Spec.Autoscaling
	if a == nil {
		vc.Status.Autoscaling = nil
		meta.RemoveStatusCondition(&vc.Status.Conditions, valkeyv1.CondAutoscaling)
		return autoscale.Decision{}, nil
	}
	var notes []autoscaleNote
	st := vc.Status.Autoscaling
	if st == nil {
		st = &valkeyv1.AutoscalingStatus{DesiredShards: autoscale.ClampShards(vc.Spec.Shards, a), SpecShards: vc.Spec.Shards}
		vc.Status.Autoscaling = st
	}
	if st.SpecShards != vc.Spec.Shards {
		if vc.Spec.Shards != st.DesiredShards {
			notes = append(notes, autoscaleNote{corev1.EventTypeWarning, valkeyv1.ReasonSpecShardsIgnored, fmt.Sprintf(
				"spec.shards changed to %d while spec.autoscaling is set: ignored, the autoscaler keeps the cluster at %d shards (status.autoscaling.desiredShards); remove spec.autoscaling to set the shard count by hand",
				vc.Spec.Shards, st.DesiredShards)})
		}
		st.SpecShards = vc.Spec.Shards
	}

	in := autoscaleInput(vc, nodes, now)
	d := autoscale.Decide(in)
	if d.Scales() {
		at := metav1.NewTime(now)
		st.DesiredShards = int32(d.To)
		st.LastDecision = string(d.Direction)
		st.LastDecisionMessage = d.Message
		st.LastDecisionTime = &at
		if d.Direction == autoscale.ScaleOut {
			st.LastScaleOutTime = &at
		} else {
			st.LastScaleInTime = &at
		}
		st.HoldReason, st.HoldMessage = "", ""
		notes = append(notes, autoscaleNote{corev1.EventTypeNormal, string(d.Direction), d.Message})
	} else {
		if d.Reason == autoscale.ReasonHeadroom && st.HoldReason != autoscale.ReasonHeadroom {
			notes = append(notes, autoscaleNote{corev1.EventTypeWarning, valkeyv1.ReasonScaleInRefused, d.Message})
		}
		st.HoldReason, st.HoldMessage = d.Reason, d.Message
	}

	status, reason, msg := metav1.ConditionTrue, valkeyv1.ReasonAutoscalingActive, fmt.Sprintf(
		"the shard count follows status.autoscaling.desiredShards (%d, bounds %d-%d); spec.shards (%d) was the starting count and is ignored while spec.autoscaling is set",
		st.DesiredShards, a.MinShards, a.MaxShards, vc.Spec.Shards)
	if unusable := unusableTriggers(a, nodes); unusable != "" {
		status, reason, msg = metav1.ConditionFalse, valkeyv1.ReasonTriggerUnusable, unusable
		if !clusterstatus.IsConditionMessage(vc, valkeyv1.CondAutoscaling, msg) {
			notes = append(notes, autoscaleNote{corev1.EventTypeWarning, valkeyv1.ReasonTriggerUnusable, msg})
		}
	}
	clusterstatus.SetCondition(vc, valkeyv1.CondAutoscaling, status, reason, msg)
	return d, notes
}

// autoscaleInput gathers the decision's input from the cluster's status
// and its nodes' samples.
func autoscaleInput(vc *valkeyv1.ValkeyCluster, nodes []*valkeyv1.ValkeyNode, now time.Time) autoscale.Input {
	a := vc.Spec.Autoscaling
	st := vc.Status.Autoscaling
	policy := autoscale.Policy{
		MinShards: int(a.MinShards), MaxShards: int(a.MaxShards),
		ScaleOut:    autoscale.Thresholds{MemoryPercent: a.ScaleOut.MemoryPercent, CPUPercent: a.ScaleOut.CPUPercent, BandwidthMbps: a.ScaleOut.BandwidthMbps},
		Window:      window(a),
		OutCooldown: seconds(a.ScaleOutCooldownSeconds, 180),
		InCooldown:  seconds(a.ScaleInCooldownSeconds, 900),
	}
	if a.ScaleIn != nil {
		policy.ScaleIn = &autoscale.Thresholds{MemoryPercent: a.ScaleIn.MemoryPercent, CPUPercent: a.ScaleIn.CPUPercent}
	}
	in := autoscale.Input{Policy: policy, Current: int(st.DesiredShards), Now: now}
	if t := st.LastScaleOutTime; t != nil {
		in.LastScaleOut = t.Time
	}
	if t := st.LastScaleInTime; t != nil {
		in.LastScaleIn = t.Time
	}
	in.ConvergedSince, in.NotConvergedWhy = converged(vc, nodes)
	in.Converged = in.NotConvergedWhy == ""
	sorted := append([]*valkeyv1.ValkeyNode(nil), nodes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, n := range sorted {
		an := autoscale.Node{Name: n.Name, Primary: n.Status.Role == valkeyv1.RolePrimary}
		if u := n.Status.Utilisation; u != nil {
			an.Samples = samplesFromAPI(u.Samples)
			an.MemoryDenominatorBytes = u.MemoryDenominatorBytes
		}
		in.Nodes = append(in.Nodes, an)
	}
	return in
}

// seconds applies the API default where admission did not, as for an
// object stored before the field existed.
func seconds(v *int32, def int32) time.Duration {
	if v == nil {
		return time.Duration(def) * time.Second
	}
	return time.Duration(*v) * time.Second
}

// window is scaleInWindowSeconds; admission refuses less than 30, so 0 is
// an object that was never defaulted.
func window(a *valkeyv1.Autoscaling) time.Duration {
	if a.ScaleInWindowSeconds == 0 {
		return defaultScaleInWindow
	}
	return time.Duration(a.ScaleInWindowSeconds) * time.Second
}

// converged: Active, the planner reports nothing to do for the current
// spec, every node Active, every slot assigned and the shard count the
// autoscaler's target. Since is when the Progressing condition last
// turned False; why names the first unmet requirement, empty when all hold.
func converged(vc *valkeyv1.ValkeyCluster, nodes []*valkeyv1.ValkeyNode) (since time.Time, why string) {
	s := vc.Status
	switch {
	case s.State != valkeyv1.StateActive:
		return time.Time{}, fmt.Sprintf("state is %s", s.State)
	case s.SlotsAssigned != 16384:
		return time.Time{}, fmt.Sprintf("%d of 16384 slots assigned", s.SlotsAssigned)
	case s.Autoscaling == nil || s.Shards != s.Autoscaling.DesiredShards:
		want := int32(0)
		if s.Autoscaling != nil {
			want = s.Autoscaling.DesiredShards
		}
		return time.Time{}, fmt.Sprintf("%d shards observed, %d desired", s.Shards, want)
	}
	p := meta.FindStatusCondition(s.Conditions, valkeyv1.CondProgressing)
	switch {
	case p == nil:
		return time.Time{}, "no Progressing condition yet"
	case p.Status != metav1.ConditionFalse:
		return time.Time{}, fmt.Sprintf("Progressing is %s, %s: %s", p.Status, p.Reason, textutil.Truncate(p.Message, 200))
	case p.ObservedGeneration != vc.Generation:
		return time.Time{}, fmt.Sprintf("generation %d not yet observed (Progressing is for %d)", vc.Generation, p.ObservedGeneration)
	}
	for _, n := range nodes {
		if n.Spec.Lifecycle != valkeyv1.LifecycleActive || !n.DeletionTimestamp.IsZero() {
			return time.Time{}, fmt.Sprintf("node %s is %s", n.Name, lifecycleOf(n))
		}
	}
	return p.LastTransitionTime.Time, ""
}

func lifecycleOf(n *valkeyv1.ValkeyNode) string {
	if !n.DeletionTimestamp.IsZero() {
		return "being deleted"
	}
	return string(n.Spec.Lifecycle)
}

// unusableTriggers names the configured thresholds a node cannot be
// measured against; empty when every one can.
func unusableTriggers(a *valkeyv1.Autoscaling, nodes []*valkeyv1.ValkeyNode) string {
	memory := a.ScaleOut.MemoryPercent != nil || (a.ScaleIn != nil && a.ScaleIn.MemoryPercent != nil)
	cpu := a.ScaleOut.CPUPercent != nil || (a.ScaleIn != nil && a.ScaleIn.CPUPercent != nil)
	var noMemory, noCPU []string
	for _, n := range nodes {
		u := n.Status.Utilisation
		if u == nil || len(u.Samples) == 0 {
			continue
		}
		if memory && u.MemoryDenominatorBytes == 0 {
			noMemory = append(noMemory, n.Name)
		}
		if cpu && u.CPULimitMillis == 0 {
			noCPU = append(noCPU, n.Name)
		}
	}
	sort.Strings(noMemory)
	sort.Strings(noCPU)
	msg := ""
	if len(noMemory) > 0 {
		msg = fmt.Sprintf("memoryPercent cannot be computed: %d node(s) %v have neither maxmemory nor a memory limit (set valkey.maxmemory or memory in the ValkeyConfig)", len(noMemory), noMemory)
	}
	if len(noCPU) > 0 {
		if msg != "" {
			msg += "; "
		}
		msg += fmt.Sprintf("cpuPercent cannot be computed: %d node(s) %v have no CPU limit (set cpu in the ValkeyConfig)", len(noCPU), noCPU)
	}
	if msg != "" {
		msg += "; those triggers are off, a scale-in they are part of is blocked, the other triggers still apply"
	}
	return msg
}
