package cluster

import (
	"context"
	"time"

	"github.com/gomomento/valkey-operator/internal/topology"
)

// plan gathers the facts the planner decides from and runs the wave it
// gets as it is. Besides the observation: whether the TLS Secret is
// invalid, whether a fleet rollout has given the cluster its turn, how
// many node containers exited in a row (the replacement record, kept in
// an annotation across reconciles), whether a node runs another Valkey
// version than its image declares or cannot load the data of the newer
// primary a downgrade put it under, and whether the cluster is paused.
func (r *Reconciler) plan(ctx context.Context, s *clusterScope) (phaseResult, error) {
	shards, replicas := desiredShape(s.vc)
	s.creating = !formed(s.vc)
	holdRoll, err := r.rolloutGate(ctx, s)
	if err != nil {
		return phaseResult{}, err
	}
	now := time.Now()
	s.failures = containerFailures(s.o)
	rec := countFailures(replacementRecordOf(s.vc), s.failures, s.o.nodes, now)
	s.versionMismatch, s.versionReason = versionCheck(s.o, s.res, now)
	s.in = topology.Input{
		Shards:           shards,
		ReplicasPerShard: replicas,
		Creating:         s.creating,
		AtomicMigration:  s.o.allAtLeast9(),
		BatchSize:        r.Options.SlotBatch,
		Members:          s.o.members,
		Now:              now,
		HoldForTLS:       s.tls.Failure != nil,
		HoldRoll:         holdRoll,
		Backoff:          rec.backoff(),
		HoldForVersion:   s.versionMismatch,
		Unseen:           s.unseen,
		Paused:           paused(s.vc),
	}
	s.wave = topology.Plan(s.in)
	if err := r.writeReplacementRecord(ctx, s.vc, rec.settled(s.wave)); err != nil {
		return phaseResult{}, err
	}
	s.held = backoffHeld(s.wave)
	return nextPhase, nil
}
