package topology

import (
	"strings"
	"testing"
)

func TestVolumeLost(t *testing.T) {
	bound := func(mut func(s *Storage)) *Storage {
		s := &Storage{Claim: "n1-data", ClaimPhase: ClaimBound, Volume: "pv-1", PinnedTo: "worker-1"}
		if mut != nil {
			mut(s)
		}
		return s
	}
	tests := []struct {
		name    string
		phase   PodPhase
		storage *Storage
		want    string // "" when not lost, else a part of the reason
	}{
		{"nothing read: never lost on a cache miss", PodPending, nil, ""},
		{"claim, volume and node there", PodPending, bound(nil), ""},
		{"claim deleted, pod gone", PodPending, bound(func(s *Storage) { s.ClaimPhase, s.Volume = ClaimMissing, "" }), "claim n1-data does not exist"},
		{"claim deleted, pod absent", PodAbsent, bound(func(s *Storage) { s.ClaimPhase = ClaimMissing }), "claim n1-data does not exist"},
		{"claim deleted while its pod runs: the process still serves", PodRunning, bound(func(s *Storage) { s.ClaimPhase = ClaimMissing }), ""},
		{"claim deleted while its pod stops: the process still serves", PodStopping, bound(func(s *Storage) { s.ClaimPhase = ClaimMissing }), ""},
		{"claim deleted, pod read around the cache runs", PodPending, bound(func(s *Storage) { s.ClaimPhase, s.PodRuns = ClaimMissing, true }), ""},
		{"claim Lost", PodPending, bound(func(s *Storage) { s.ClaimPhase = ClaimLost }), "claim n1-data is Lost"},
		{"volume deleted", PodPending, bound(func(s *Storage) { s.VolumeMissing = true }), "volume pv-1 of claim n1-data does not exist"},
		{"pinned node deleted", PodPending, bound(func(s *Storage) { s.PinnedNodeMissing = true }), "pinned to Kubernetes node worker-1, which does not exist"},
		{"pinned node deleted, pod runs elsewhere", PodPending, bound(func(s *Storage) { s.PinnedNodeMissing, s.PodRuns = true, true }), ""},
		{"claim Pending, not bound yet (WaitForFirstConsumer)", PodPending, &Storage{Claim: "n1-data", ClaimPhase: ClaimPending}, ""},
		{"claim Pending whatever its selected node", PodPending, &Storage{Claim: "n1-data", ClaimPhase: ClaimPending, PinnedNodeMissing: true, VolumeMissing: true}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			why, lost := VolumeLost(Member{Name: "n1", Pod: Pod{Phase: tt.phase}, Storage: tt.storage})
			if lost != (tt.want != "") || !strings.Contains(why, tt.want) {
				t.Errorf("VolumeLost = %q, %v; want lost %v with %q", why, lost, tt.want != "", tt.want)
			}
		})
	}
}

// persistent1x1 is a formed 1x1 cluster, primary n1 and replica n2, whose
// nodes keep their data on claims.
func persistent1x1() []Member {
	return mesh(nd{name: "n1", shard: 0, slots: rs(0, TotalSlots-1)}, nd{name: "n2", shard: 0, role: RoleReplica, primary: "n1"})
}

// comingBack marks name's pod as the controller reports a persistent
// node's missing pod (pending, coming back on its claim), suspected but
// not yet flagged failed by its peers, with what the API server said of
// its claim.
func comingBack(ms []Member, name string, st *Storage) {
	kill(ms, name, false)
	m := member(ms, name)
	m.Pod.Phase, m.PodCreated, m.Storage = PodPending, true, st
}

var claimGone = &Storage{Claim: "claim", ClaimPhase: ClaimMissing}

func TestLostVolumeDecisions(t *testing.T) {
	tests := []struct {
		name     string
		replicas int
		members  func() []Member
		want     string
	}{
		{"a primary coming back on its claim is waited for", 1, func() []Member {
			ms := persistent1x1()
			comingBack(ms, "n1", &Storage{Claim: "claim", ClaimPhase: ClaimBound})
			return ms
		}, "Wait (" + ReasonPodPending + ": n1)"},
		{"a primary whose claim is Pending is waited for", 1, func() []Member {
			ms := persistent1x1()
			comingBack(ms, "n1", &Storage{Claim: "claim", ClaimPhase: ClaimPending})
			return ms
		}, "Wait (" + ReasonPodPending + ": n1)"},
		{"a primary whose claim is gone is taken over by its synced replica", 1, func() []Member {
			ms := persistent1x1()
			comingBack(ms, "n1", claimGone)
			return ms
		}, "Failover node=n2 mode=takeover (" + ReasonTakeover + ": n2 replaces n1)"},
		{"a primary whose claim is gone while its pod runs is not lost", 1, func() []Member {
			ms := persistent1x1()
			member(ms, "n1").Storage = claimGone
			return ms
		}, "Done (cluster converged)"},
		{"a former primary whose volume is gone is forgotten once its replica took over", 1, func() []Member {
			ms := mesh(nd{name: "n2", shard: 0, slots: rs(0, TotalSlots-1)}, nd{name: "n1", shard: 0, role: RoleReplica, primary: "n2"})
			comingBack(ms, "n1", &Storage{Claim: "claim", ClaimPhase: ClaimBound, Volume: "pv", VolumeMissing: true})
			return ms
		}, "Forget id=id-n1 on=[n2] (forgetting departed node: n1)"},
		{"then deleted, saying why", 1, func() []Member {
			ms := mesh(nd{name: "n2", shard: 0, slots: rs(0, TotalSlots-1)}, nd{name: "n1", shard: 0, role: RoleReplica, primary: "n2"})
			comingBack(ms, "n1", &Storage{Claim: "claim", ClaimPhase: ClaimBound, Volume: "pv", PinnedTo: "w1", PinnedNodeMissing: true})
			isolate(ms, "n1")
			return ms
		}, "DeleteNode node=n1 (" + ReasonVolumeLost + ": n1: volume pv of claim claim is pinned to Kubernetes node w1, which does not exist)"},
		{"the only node of a shard without replica, its claim gone: deleted (reported lost by the controller)", 0, func() []Member {
			ms := mesh(nd{name: "n1", shard: 0, slots: rs(0, TotalSlots-1)})
			comingBack(ms, "n1", claimGone)
			return ms
		}, "DeleteNode node=n1 (" + ReasonVolumeLost + ": n1: claim claim does not exist)"},
		{"the only node of a shard without replica, its claim there: waited for", 0, func() []Member {
			ms := mesh(nd{name: "n1", shard: 0, slots: rs(0, TotalSlots-1)})
			comingBack(ms, "n1", &Storage{Claim: "claim", ClaimPhase: ClaimBound})
			return ms
		}, "Wait (waiting for a new primary to take orphaned slots: 0-16383)"},
		{"a lost primary of three with no replica is forgotten as lost with its keys", 0, func() []Member {
			ms := mesh(nd{name: "n1", shard: 0, slots: rs(0, 5461)}, nd{name: "n2", shard: 1, slots: rs(5462, 10922)}, nd{name: "n3", shard: 2, slots: rs(10923, 16383)})
			comingBack(ms, "n1", claimGone)
			return ms
		}, "Forget id=id-n1 on=[n2 n3] (" + ReasonPrimaryLostNoReplica + ": n1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := tt.members()
			shards := 0
			for _, m := range ms {
				shards = max(shards, m.ShardIndex+1)
			}
			got := Plan(Input{Shards: shards, ReplicasPerShard: tt.replicas, Members: ms})
			if got.String() != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
