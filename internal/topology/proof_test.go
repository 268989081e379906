package topology

import (
	"slices"
	"strings"
	"testing"
	"time"
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
			v.LinkUp, v.SyncDone, v.LinkDownSeconds = false, false, int64(ElectionDeadline/time.Second)-1
			return ms
		}, "Wait (" + ReasonWaitAutoFailover + ": n1)"},
		{"with quorum, an election that has not happened past the deadline is not waited for", 3, 1, func() []Member {
			ms := formed3()
			kill(ms, "n1", true)
			v := member(ms, "n4").View
			v.LinkUp, v.SyncDone, v.LinkDownSeconds = false, false, int64(ElectionDeadline/time.Second)
			return ms
		}, "Failover node=n4 mode=takeover (" + ReasonElectionOverdue + ": n4 replaces n1)"},
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

// A joining node gets one pod. Absent before it was created, the pod is
// still to come; absent after, it is gone for good and the node is
// replaced, through a forget first when the cluster had met it, on its
// peers' word.
func TestJoiningNodeWhosePodVanished(t *testing.T) {
	joining := func(created, met, flagged bool) []Member {
		nodes := append(formed3Nodes(), nd{name: "n7", shard: 0, role: RoleReplica, primary: "n1", life: LifecycleJoining})
		ms := mesh(nodes...)
		j := member(ms, "n7")
		j.JoinType, j.PodCreated = JoinReplica, created
		kill(ms, "n7", flagged)
		if !flagged {
			for i := range ms {
				if v := ms[i].View; v != nil {
					for k := range v.Peers {
						if v.Peers[k].ID == id("n7") {
							v.Peers[k].PFail = false
						}
					}
				}
			}
		}
		j.Pod.Phase = PodAbsent
		if !met {
			for i := range ms {
				if v := ms[i].View; v != nil {
					v.Peers = slices.DeleteFunc(v.Peers, func(p Peer) bool { return p.ID == id("n7") })
				}
			}
		}
		return ms
	}
	tests := []struct {
		name    string
		members []Member
		want    string
	}{
		{"not created yet: it counts as shard 0's coming replica", joining(false, false, false),
			`CreateNode shard=1 join="replica" (restoring replica count: shard 1); CreateNode shard=2 join="replica" (restoring replica count: shard 2)`},
		{"created, then gone before it met anyone: deleted", joining(true, false, false), "DeleteNode node=n7 (deleting dead node: n7)"},
		{"gone after it met the cluster, its peers flag it: forgotten", joining(true, true, true), "Forget id=id-n7 on=[n1 n2 n3 n4 n5 n6] (forgetting departed node: n7)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := Plan(Input{Shards: 3, ReplicasPerShard: 2, Members: tt.members})
			if w.String() != tt.want {
				t.Fatalf("got  %s\nwant %s", w, tt.want)
			}
		})
	}
	// Met, not flagged yet: its process may still run; nothing removes it.
	w := Plan(Input{Shards: 3, ReplicasPerShard: 2, Members: joining(true, true, false)})
	for _, a := range w.Actions {
		if (a.Forget != nil && a.Forget.NodeID == id("n7")) || (a.DeleteNode != nil && a.DeleteNode.Node == "n7") {
			t.Fatalf("%s removes a node its peers still reach", a)
		}
	}
}

// A former primary that was cut off while its replica took over still
// claims its slots until it learns otherwise; its peers flag it FAIL. The
// live, unflagged owner is the slots' owner and the shard's primary, so
// the stale claim is never a migration's source.
func TestStaleSlotClaimLosesToUnflaggedOwner(t *testing.T) {
	ms := formed3()
	n4 := member(ms, "n4").View
	n4.Role, n4.PrimaryID, n4.Slots = RolePrimary, "", rs(0, 5461)
	for i := range ms {
		v := ms[i].View
		for j := range v.Peers {
			switch v.Peers[j].ID {
			case id("n1"):
				v.Peers[j].Fail = ms[i].Name != "n1"
			case id("n4"):
				v.Peers[j].Role, v.Peers[j].Slots = RolePrimary, rs(0, 5461)
			}
		}
	}
	for _, order := range [][]string{{"n1", "n4"}, {"n4", "n1"}} {
		in := Input{Shards: 3, ReplicasPerShard: 1, Members: append([]Member{*member(ms, order[0]), *member(ms, order[1])}, ms[1:3]...)}
		in.Members = append(in.Members, *member(ms, "n5"), *member(ms, "n6"))
		w := newWorld(in)
		if got := w.slotOwner(0); got != id("n4") {
			t.Fatalf("slot 0 owned by %s, want the unflagged n4", got)
		}
		if d := w.designated(0); d == nil || d.Name != "n4" {
			t.Fatalf("shard 0's designated primary %v, want n4", d)
		}
		for _, a := range Plan(in).Actions {
			if a.MigrateSlots != nil && a.MigrateSlots.From == "n1" {
				t.Fatalf("%s moves slots from the stale claimant", a)
			}
		}
	}
}
