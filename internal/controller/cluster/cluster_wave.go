package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrlrt "sigs.k8s.io/controller-runtime"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/controller/metrics"
	"github.com/gomomento/valkey-operator/internal/textutil"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// afterAction is how soon a cluster is reconciled again after a wave:
// immediately in spirit, but through the delaying queue so the rate limiter's
// per-item backoff, meant for errors, never paces a healthy bootstrap.
const afterAction = 50 * time.Millisecond

// afterFailover is how long a failover is given to complete (a manual
// failover takes well under a second; cluster-node-timeout is 5 s).
const afterFailover = 5 * time.Second

// afterFailedMigration paces the retries of a slot move whose last attempt
// failed.
const afterFailedMigration = 5 * time.Second

// afterStep is how soon a cluster waiting on a step of a procedure (a
// handshake, gossip, slot agreement, a replica's initial sync, a slot
// migration) looks again. Those pass by themselves within a second or two
// and nothing in the API signals them, so waiting the full PendingRequeue
// would stretch every bootstrap and join by whole seconds.
const afterStep = 250 * time.Millisecond

// runWave acts on the wave and says when to look again.
func (r *Reconciler) runWave(ctx context.Context, s *clusterScope) (ctrlrt.Result, error) {
	vc, wave := s.vc, s.wave
	log := clusterstatus.LogFrom(ctx)
	s.found.wave = &waveFinding{}
	if !wave.Acts() {
		if s.creating && wave.Done() {
			log.Info(topology.ReasonFormed)
			r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.ReasonFormed, "Bootstrap", "%s", topology.ReasonFormed)
		}
		if wave.Lead().Cause != topology.CausePaused {
			// A paused wave waits on the annotation, not on the nodes.
			s.found.wave.unreachable = unreachableMessage(s.o)
		}
		// A converged cluster is looked at again at its safety pass: until
		// then its watched objects and the autoscaler's samples of its
		// nodes (a role, link or replica count that changed, a node that
		// stopped answering) wake it. So does a cluster waiting for its
		// restore: each of the restore controller's status writes wakes it
		// (watch.HandedOver).
		if wave.Done() && !s.rotating && !s.live.busy() {
			return ctrlrt.Result{RequeueAfter: r.Options.SafetyFor(vc.UID)}, nil
		}
		if lead := wave.Lead(); loggedWait(lead) {
			log.Info(lead.Reason, "detail", lead.Detail)
		}
		return ctrlrt.Result{RequeueAfter: afterWait(wave.Lead(), r.Options.PendingRequeue, r.Options.SteadyResync)}, nil
	}
	log.V(1).Info("acting", "wave", wave.String())
	for _, a := range wave.Actions {
		if a.Retry {
			log.Info("slot migration failed, retrying", "detail", a.Detail)
		}
	}
	if err := r.actWave(ctx, s, wave); err != nil {
		return ctrlrt.Result{}, err
	}
	return afterWave(wave), nil
}

// actWave runs every action of a wave, at most Options.WaveConcurrency at
// once, and waits for all of them: the actions are independent, so one
// failing never stops the others. Each failure is counted, reported as a
// Warning Event and in Progressing; the joined error makes the reconcile
// back off.
func (r *Reconciler) actWave(ctx context.Context, s *clusterScope, wave topology.Wave) error {
	vc, o := s.vc, s.o
	errs := make([]error, len(wave.Actions))
	limit := max(r.Options.WaveConcurrency, 1)
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i, a := range wave.Actions {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = r.act(ctx, s, a)
		}()
	}
	wg.Wait()
	var failed []error
	var firstKind topology.Kind
	for i, a := range wave.Actions {
		err := errs[i]
		metrics.ActionsTotal.WithLabelValues(vc.Namespace, vc.Name, string(a.Kind), resultLabel(err)).Inc()
		if err == nil {
			if loss, ok := lostShard(o, a); ok {
				msg := loss.message(time.Now())
				s.found.wave.dataLost = msg
				if err := r.recordDataLoss(ctx, vc, msg); err != nil {
					failed = append(failed, err)
				}
			}
			continue
		}
		if ctx.Err() != nil {
			// The operator is stopping (a restart, a lost lease): the
			// action was cut short, not refused. The next operator plans
			// it again from what Valkey then reports.
			failed = append(failed, fmt.Errorf("%s: %w", a.String(), err))
			continue
		}
		r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, valkeyv1.ReasonActionFailed, string(a.Kind), "%s", textutil.Truncate(err.Error(), 1000))
		if len(failed) == 0 {
			firstKind = a.Kind
		}
		failed = append(failed, fmt.Errorf("%s: %w", a.String(), err))
	}
	if len(failed) == 0 {
		return nil
	}
	if ctx.Err() != nil {
		return errors.Join(failed...)
	}
	msg := fmt.Sprintf("%d of %d actions failed; %s failed: %v", len(failed), len(wave.Actions), firstKind, failed[0])
	s.found.wave.actionFailed = textutil.Truncate(msg, 2000)
	return errors.Join(failed...)
}

// afterWave is how soon to look again after a wave that succeeded.
func afterWave(wave topology.Wave) ctrlrt.Result {
	after := afterAction
	for _, a := range wave.Actions {
		switch {
		case a.Retry:
			// Whatever failed it (the target's ACL, a lost link) rarely
			// clears within a tick; retrying at once only floods the Events.
			after = max(after, afterFailedMigration)
		case a.Kind == topology.KindFailover:
			// Roles flip only once the replica has caught up and won its
			// election; until then the planner holds (FailoverGrace), so
			// look again when the flip is likely done.
			after = max(after, afterFailover)
		}
	}
	return ctrlrt.Result{RequeueAfter: after}
}

// loggedWait says whether a wait is worth a log line of its own: a
// bootstrap the scheduler blocks, or a lost primary Valkey is expected to
// fail over. The other waits show in status only.
func loggedWait(lead topology.Action) bool {
	switch lead.Cause {
	case topology.CauseAutoFailover:
		return true
	case topology.CausePodUnschedulable:
		return lead.Tier == topology.TierBootstrap
	}
	return false
}

// afterWait is how soon to look again when the plan only waits: soon for a
// step of a procedure under way, pending for a pod to schedule, a node to
// answer, something a person must fix, and steady while paused: removing
// the annotation wakes the cluster by itself.
func afterWait(lead topology.Action, pending, steady time.Duration) time.Duration {
	switch {
	case lead.Kind != topology.KindWait:
	case lead.Cause == topology.CausePaused:
		return steady
	case lead.Cause == topology.CauseNodesUnseen:
		return min(cacheRecheck, pending)
	case lead.Cause == topology.CauseNone && lead.Tier != topology.TierSteady:
		return min(afterStep, pending)
	}
	return pending
}

func resultLabel(err error) string {
	if err != nil {
		return "error"
	}
	return "success"
}
