package cluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/textutil"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// report records what the plan and the pods mean for the status, and
// sends the Events that go with them.
func (r *Reconciler) report(ctx context.Context, s *clusterScope) (phaseResult, error) {
	vc := s.vc
	r.notePause(ctx, vc)
	containers := containersCondition(s.failures, s.held)
	r.announceContainerFailures(vc, s.failures, containers)
	versions := versionsCondition(s.res, s.versionReason, s.versionMismatch)
	r.announceVersions(vc, versions)
	lead := s.wave.Lead()
	if p := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondProgressing); lead.Cause == topology.CauseScaleInNoHeadroom &&
		(p == nil || p.Reason != valkeyv1.ReasonInsufficientMemory) {
		// Once per hold: the figures in the message move with every write.
		r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, valkeyv1.ReasonInsufficientMemory, "ScaleIn", "%s", lead.Describe())
	}
	s.found.report = &reportFinding{
		summary:        topology.Summarize(s.in),
		nodeNames:      s.o.names(),
		selector:       labels.SelectorFromSet(render.ClusterSelector(vc.Name)).String(),
		shards:         s.in.Shards,
		lead:           lead,
		state:          decideState(s.creating, lead, s.o),
		containers:     containers,
		versions:       versions,
		liveApplying:   s.live.applying,
		restorePending: restorePending(vc),
		aclHeld:        s.aclHeld,
		paused:         paused(vc),
	}
	return nextPhase, nil
}

// noteInvalid announces a TLS validation failure when the cluster becomes
// Invalid, or stays Invalid for another reason, with a Warning Event.
func (r *Reconciler) noteInvalid(ctx context.Context, vc *valkeyv1.ValkeyCluster, prev valkeyv1.ValkeyClusterStatus) {
	next := vc.Status
	if next.State != valkeyv1.StateInvalid || (prev.State == valkeyv1.StateInvalid && prev.Message == next.Message) {
		return
	}
	reason := valkeyv1.ReasonInvalid
	if c := meta.FindStatusCondition(next.Conditions, valkeyv1.CondTLSValid); c != nil {
		reason = c.Reason
	}
	clusterstatus.LogFrom(ctx).Info("TLS Secret validation failed, setting cluster Invalid", "reason", reason, "message", next.Message)
	r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, reason, "ValidateTLS", "%s", next.Message)
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
	r.Recorder.Eventf(vc, nil, eventType, valkeyv1.ReasonStateChanged, "UpdateState", "%s -> %s: %s", from, to, textutil.Truncate(why, 900))
}
