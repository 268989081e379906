package topology

import (
	"cmp"
	"fmt"
	"slices"
)

// cleanup retires surplus replicas, from the shard with the most first.
func (w *world) cleanup() (Action, bool) {
	var victim *node
	most := w.in.ReplicasPerShard
	for _, idx := range w.liveShards() {
		p := w.designated(idx)
		if p == nil || p.selfSlots() == 0 {
			continue
		}
		var reps []*node
		for _, n := range w.shardMembers(idx) {
			if n != p {
				reps = append(reps, n)
			}
		}
		if len(reps) <= most {
			continue
		}
		most = len(reps)
		slices.SortStableFunc(reps, func(a, b *node) int {
			return cmp.Or(
				boolFirst(!a.live(), !b.live()),
				boolFirst(a.joining(), b.joining()),
				boolFirst(!(a.View != nil && a.View.SyncDone), !(b.View != nil && b.View.SyncDone)),
				cmp.Compare(b.Name, a.Name))
		})
		victim = reps[0]
	}
	if victim == nil {
		return Action{}, false
	}
	return markLeaving(TierCleanup, victim, "removing surplus replica"), true
}

// settled returns Done when the cluster has exactly its desired shape and
// every node agrees, else Wait with the first thing missing.
func (w *world) settled() (Action, bool) {
	S, R := w.in.Shards, w.in.ReplicasPerShard
	for _, n := range w.nodes {
		switch {
		case n.dead():
			return wait(w.departureTier(n), "waiting for dead node to be removed", n.Name), true
		case n.Pod.Phase == PodStopping:
			return waitForPod(TierStability, n), true
		case !n.live():
			return waitForPod(w.lifecycleTier(n), n), true
		case w.inDepartureGrace(n):
			return wait(w.lifecycleTier(n), ReasonDepartureGrace, n.Name), true
		case n.joining() || n.leaving():
			return wait(w.lifecycleTier(n), "waiting for node to finish "+string(n.Lifecycle), n.Name), true
		}
	}
	shards := w.liveShards()
	if len(shards) != S {
		return wait(TierSteady, "waiting for shard count", fmt.Sprintf("%d of %d", len(shards), S)), true
	}
	for _, idx := range shards {
		p := w.designated(idx)
		if p == nil || p.selfSlots() == 0 {
			return wait(TierSteady, "shard has no slot-holding primary", fmt.Sprint(idx)), true
		}
		reps := w.replicasFollowing(p.id)
		if r := len(reps); r != R || len(w.shardMembers(idx)) != 1+R {
			return wait(TierSteady, "waiting for replicas", fmt.Sprintf("shard %d has %d, want %d", idx, r, R)), true
		}
		// A replica that is still loading its primary's data counts for
		// the shape but not for safety: until it holds the data, losing
		// the primary loses the shard, so the cluster is not converged.
		for _, r := range reps {
			if !r.View.LinkUp || !r.View.SyncDone {
				return waitOn(TierStability, CauseReplicaSyncing, ReasonReplicaSyncing, r.Name), true
			}
		}
	}
	if ok, why := w.formed(); !ok {
		// Nodes that do not yet agree on the slot map (gossip after a move,
		// a failover, a join) answer some clients CLUSTERDOWN or a stale
		// MOVED: the change is not over, so the state says Updating rather
		// than Active.
		return wait(TierTopology, "waiting for the cluster to agree", why), true
	}
	return done("cluster converged"), true
}
