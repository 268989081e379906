package topology

import (
	"strings"
	"testing"
)

// rollOf1x1 is a 1x1 shard in the middle of a roll: n1 the outdated
// primary, n2 its outdated replica, fully synced, and n3 the fresh replica
// the roll added, still in its first sync. Then n1's process dies.
func rollOf1x1() []Member {
	ms := mesh(
		nd{name: "n1", shard: 0, slots: rs(0, 16383), outdated: true},
		nd{name: "n2", shard: 0, role: RoleReplica, primary: "n1", outdated: true},
		nd{name: "n3", shard: 0, role: RoleReplica, primary: "n1", life: LifecycleJoining},
	)
	member(ms, "n3").JoinType = JoinReplica
	kill(ms, "n1", false)
	for _, name := range []string{"n2", "n3"} {
		v := member(ms, name).View
		v.LinkUp, v.SyncDone = false, false
	}
	member(ms, "n2").View.ReplOffset = 4000
	fresh := member(ms, "n3").View
	fresh.HoldsData, fresh.ReplOffset = false, 1
	return ms
}

// A lost primary is replaced only by a replica that holds its data, and
// forgotten only on proof that its process is gone; when no replica holds
// its data, the loss is an action that says so.
func TestLostPrimaryNeedsDataAndProof(t *testing.T) {
	tests := []struct {
		name     string
		shards   int
		replicas int
		members  func() []Member
		want     string
	}{
		{"a roll's fresh replica, still syncing, never takes over: the synced one does", 1, 1, rollOf1x1,
			"Failover node=n2 mode=takeover (" + ReasonTakeover + ": n2 replaces n1)"},
		{"the most caught-up replica takes over, outdated or not", 1, 1, func() []Member {
			ms := rollOf1x1()
			fresh := member(ms, "n3").View
			fresh.HoldsData, fresh.ReplOffset = true, 5000
			return ms
		}, "Failover node=n3 mode=takeover (" + ReasonTakeover + ": n3 replaces n1)"},
		{"with quorum, a replica that holds nothing is not waited for: Valkey never elects it", 3, 1, func() []Member {
			ms := formed3()
			kill(ms, "n1", true)
			v := member(ms, "n4").View
			v.LinkUp, v.SyncDone, v.HoldsData = false, false, false
			return ms
		}, "DeleteNode node=n4 (" + ReasonEmptyReplicaOfLostPrimary + ": n4 (replica of n1))"},
		{"with quorum, a replica that holds the data is left to Valkey's election", 3, 1, func() []Member {
			ms := formed3()
			kill(ms, "n1", true)
			v := member(ms, "n4").View
			v.LinkUp, v.SyncDone = false, false
			return ms
		}, "Wait (" + ReasonWaitAutoFailover + ": n1)"},
		{"a primary whose pod is missing while its peers reach it is not forgotten", 3, 0, func() []Member {
			ms := mesh(formed3Nodes()[:3]...)
			member(ms, "n1").Pod.Phase, member(ms, "n1").View = PodAbsent, nil
			return ms
		}, "Wait (" + ReasonPodMissingButAnswers + ": n1)"},
		{"once its peers stop reaching it too, it is lost, and said so", 3, 0, func() []Member {
			ms := mesh(formed3Nodes()[:3]...)
			kill(ms, "n1", true)
			member(ms, "n1").Pod.Phase = PodAbsent
			return ms
		}, "Forget id=id-n1 on=[n2 n3] (" + ReasonPrimaryLostNoReplica + ": n1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := Plan(Input{Shards: tt.shards, ReplicasPerShard: tt.replicas, Members: tt.members()})
			if w.String() != tt.want {
				t.Fatalf("got  %s\nwant %s", w, tt.want)
			}
			for _, a := range w.Actions {
				if a.LosesData != (a.Kind == KindForget && strings.HasPrefix(tt.name, "once")) {
					t.Fatalf("%s: LosesData %v", a, a.LosesData)
				}
			}
		})
	}
}

// A replica relabelled out of the operator's view keeps its place: its
// peers still reach it, so it is neither forgotten nor deleted.
func TestMissingPodOfAnsweringReplicaIsKept(t *testing.T) {
	ms := formed3()
	member(ms, "n4").Pod.Phase, member(ms, "n4").View = PodAbsent, nil
	w := Plan(Input{Shards: 3, ReplicasPerShard: 1, Members: ms})
	for _, a := range w.Actions {
		if (a.Forget != nil && a.Forget.NodeID == id("n4")) || (a.DeleteNode != nil && a.DeleteNode.Node == "n4") {
			t.Fatalf("%s acts on a replica whose process its peers still reach", a)
		}
	}
}
