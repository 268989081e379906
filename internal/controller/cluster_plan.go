package controller

import (
	"context"
	"time"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// plan has the planner decide the wave from the observation alone (while
// the TLS Secret is invalid, it keeps only healing; while a fleet rollout
// has not given the cluster its turn, the roll waits); creations of nodes
// whose containers keep failing back off, and none is created while a
// node runs another Valkey version than its image declares or cannot load
// the data of the newer primary a downgrade put it under.
func (r *ClusterReconciler) plan(ctx context.Context, s *clusterScope) (phaseResult, error) {
	shards, replicas := desiredShape(s.vc)
	s.creating = !formed(s.vc)
	holdRoll, err := r.rolloutGate(ctx, s)
	if err != nil {
		return phaseResult{}, err
	}
	s.in = topology.Input{
		Shards:           shards,
		ReplicasPerShard: replicas,
		Creating:         s.creating,
		AtomicMigration:  s.o.allAtLeast9(),
		BatchSize:        r.Options.SlotBatch,
		Members:          s.o.members,
		Now:              time.Now(),
		HoldForTLS:       s.tls.Failure != nil,
		HoldRoll:         holdRoll,
	}
	wave := topology.Plan(s.in)
	s.failures = containerFailures(s.o)
	if s.wave, s.held, err = r.backOffReplacements(ctx, s.vc, s.o, s.failures, wave); err != nil {
		return phaseResult{}, err
	}
	s.versionMismatch, s.versionReason = versionMismatch(s.o.nodes, s.o.versions, s.res), valkeyv1.ReasonVersionMismatch
	if s.versionMismatch == "" && s.res != nil {
		s.versionMismatch, s.versionReason = downgradeBlocked(s.o.members, s.o.nodes, s.o.versions, s.res.Image, s.in.Now), valkeyv1.ReasonDowngradeBlocked
	}
	s.wave = holdForVersion(s.wave, s.versionMismatch)
	return nextPhase, nil
}
