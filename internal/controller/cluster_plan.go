package controller

import (
	"context"
	"time"

	"github.com/gomomento/valkey-operator/internal/topology"
)

// plan has the planner decide the wave from the observation alone (while
// the TLS Secret is invalid, it keeps only healing); creations of nodes
// whose containers keep failing back off, and none is created while a
// node runs another Valkey version than its image declares.
func (r *ClusterReconciler) plan(ctx context.Context, s *clusterScope) (phaseResult, error) {
	shards, replicas := desiredShape(s.vc)
	s.creating = !formed(s.vc)
	s.in = topology.Input{
		Shards:           shards,
		ReplicasPerShard: replicas,
		Creating:         s.creating,
		AtomicMigration:  s.o.allAtLeast9(),
		BatchSize:        r.Options.SlotBatch,
		Members:          s.o.members,
		Now:              time.Now(),
		HoldForTLS:       s.tls.Failure != nil,
	}
	wave := topology.Plan(s.in)
	s.failures = containerFailures(s.o)
	var err error
	if s.wave, s.held, err = r.backOffReplacements(ctx, s.vc, s.o, s.failures, wave); err != nil {
		return phaseResult{}, err
	}
	s.versionMismatch = versionMismatch(s.o.nodes, s.o.versions, s.res)
	s.wave = holdForVersion(s.wave, s.versionMismatch)
	return nextPhase, nil
}
