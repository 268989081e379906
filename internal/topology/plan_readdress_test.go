package topology

import (
	"testing"
)

// newIP is the address a restarted member's new pod runs at.
func newIP(name string) string { return "10.2.0." + name[1:] }

// restarted gives each named member a new pod address while every view,
// its own included, keeps the others at the addresses they had: what
// nodes.conf on a volume brings back.
func restarted(ms []Member, names ...string) {
	for _, name := range names {
		member(ms, name).Pod.IP = newIP(name)
	}
}

// peerOf is name's entry for other in name's view.
func peerOf(ms []Member, name, other string) *Peer {
	v := member(ms, name).View
	for i := range v.Peers {
		if v.Peers[i].ID == id(other) {
			return &v.Peers[i]
		}
	}
	panic(name + " does not know " + other)
}

// formed2x0 is a converged 2x0 cluster.
func formed2x0() []Member {
	return mesh(nd{name: "n1", shard: 0, slots: rs(0, 8191)}, nd{name: "n2", shard: 1, slots: rs(8192, 16383)})
}

func TestReaddressDecisions(t *testing.T) {
	tests := []struct {
		name    string
		members func() []Member
		want    string
	}{
		{"full restart: each node meets every other at its new address, in one wave", func() []Member {
			ms := formed2x0()
			restarted(ms, "n1", "n2")
			return ms
		}, "Meet node=n1 seed=n2(10.2.0.2) (" + ReasonReaddress + ": n1 meets n2 10.1.0.2 -> 10.2.0.2); " +
			"Meet node=n2 seed=n1(10.2.0.1) (" + ReasonReaddress + ": n2 meets n1 10.1.0.1 -> 10.2.0.1)"},
		{"full restart of a 3x1: every node meets the five others", func() []Member {
			ms := formed3()
			restarted(ms, "n1", "n2", "n3", "n4", "n5", "n6")
			return ms
		}, "Meet node=n1 seed=n4(10.2.0.4),n2(10.2.0.2),n5(10.2.0.5),n3(10.2.0.3),n6(10.2.0.6) (" + ReasonReaddress +
			": n1 meets n4 10.1.0.4 -> 10.2.0.4, n2 10.1.0.2 -> 10.2.0.2, n5 10.1.0.5 -> 10.2.0.5, n3 10.1.0.3 -> 10.2.0.3, n6 10.1.0.6 -> 10.2.0.6); " +
			"Meet node=n4 seed=n1(10.2.0.1),n2(10.2.0.2),n5(10.2.0.5),n3(10.2.0.3),n6(10.2.0.6) (" + ReasonReaddress +
			": n4 meets n1 10.1.0.1 -> 10.2.0.1, n2 10.1.0.2 -> 10.2.0.2, n5 10.1.0.5 -> 10.2.0.5, n3 10.1.0.3 -> 10.2.0.3, n6 10.1.0.6 -> 10.2.0.6); " +
			"Meet node=n2 seed=n1(10.2.0.1),n4(10.2.0.4),n5(10.2.0.5),n3(10.2.0.3),n6(10.2.0.6) (" + ReasonReaddress +
			": n2 meets n1 10.1.0.1 -> 10.2.0.1, n4 10.1.0.4 -> 10.2.0.4, n5 10.1.0.5 -> 10.2.0.5, n3 10.1.0.3 -> 10.2.0.3, n6 10.1.0.6 -> 10.2.0.6); " +
			"Meet node=n5 seed=n1(10.2.0.1),n4(10.2.0.4),n2(10.2.0.2),n3(10.2.0.3),n6(10.2.0.6) (" + ReasonReaddress +
			": n5 meets n1 10.1.0.1 -> 10.2.0.1, n4 10.1.0.4 -> 10.2.0.4, n2 10.1.0.2 -> 10.2.0.2, n3 10.1.0.3 -> 10.2.0.3, n6 10.1.0.6 -> 10.2.0.6); " +
			"Meet node=n3 seed=n1(10.2.0.1),n4(10.2.0.4),n2(10.2.0.2),n5(10.2.0.5),n6(10.2.0.6) (" + ReasonReaddress +
			": n3 meets n1 10.1.0.1 -> 10.2.0.1, n4 10.1.0.4 -> 10.2.0.4, n2 10.1.0.2 -> 10.2.0.2, n5 10.1.0.5 -> 10.2.0.5, n6 10.1.0.6 -> 10.2.0.6); " +
			"Meet node=n6 seed=n1(10.2.0.1),n4(10.2.0.4),n2(10.2.0.2),n5(10.2.0.5),n3(10.2.0.3) (" + ReasonReaddress +
			": n6 meets n1 10.1.0.1 -> 10.2.0.1, n4 10.1.0.4 -> 10.2.0.4, n2 10.1.0.2 -> 10.2.0.2, n5 10.1.0.5 -> 10.2.0.5, n3 10.1.0.3 -> 10.2.0.3)"},
		{"peers flagged failing: the meets come before any wait on the flags", func() []Member {
			ms := formed2x0()
			restarted(ms, "n1", "n2")
			peerOf(ms, "n1", "n2").Fail = true
			peerOf(ms, "n2", "n1").PFail = true
			return ms
		}, "Meet node=n1 seed=n2(10.2.0.2) (" + ReasonReaddress + ": n1 meets n2 10.1.0.2 -> 10.2.0.2); " +
			"Meet node=n2 seed=n1(10.2.0.1) (" + ReasonReaddress + ": n2 meets n1 10.1.0.1 -> 10.2.0.1)"},
		{"a peer whose address was dropped (noaddr) is met too", func() []Member {
			ms := formed2x0()
			restarted(ms, "n2")
			peerOf(ms, "n1", "n2").IP = ""
			return ms
		}, "Meet node=n1 seed=n2(10.2.0.2) (" + ReasonReaddress + ": n1 meets n2  -> 10.2.0.2)"},
		{"one node back at a new address: only those that know it at the old one meet it", func() []Member {
			ms := formed3()
			restarted(ms, "n2")
			peerOf(ms, "n5", "n2").IP = newIP("n2") // it already told its replica
			return ms
		}, "Meet node=n1 seed=n2(10.2.0.2) (" + ReasonReaddress + ": n1 meets n2 10.1.0.2 -> 10.2.0.2); " +
			"Meet node=n4 seed=n2(10.2.0.2) (" + ReasonReaddress + ": n4 meets n2 10.1.0.2 -> 10.2.0.2); " +
			"Meet node=n3 seed=n2(10.2.0.2) (" + ReasonReaddress + ": n3 meets n2 10.1.0.2 -> 10.2.0.2); " +
			"Meet node=n6 seed=n2(10.2.0.2) (" + ReasonReaddress + ": n6 meets n2 10.1.0.2 -> 10.2.0.2)"},
		{"a handshake with the new address under way is not repeated", func() []Member {
			ms := formed2x0()
			restarted(ms, "n1", "n2")
			v := member(ms, "n1").View
			v.Peers = append(v.Peers, Peer{ID: "tmp", IP: newIP("n2"), Handshake: true})
			return ms
		}, "Meet node=n2 seed=n1(10.2.0.1) (" + ReasonReaddress + ": n2 meets n1 10.1.0.1 -> 10.2.0.1)"},
		{"a member that does not answer is never met: its address is not proven", func() []Member {
			ms := formed2x0()
			restarted(ms, "n1", "n2")
			member(ms, "n2").View = nil
			return ms
		}, "Wait (waiting for node to answer: n2)"},
		{"another node ID at the address is not the known member: no meet", func() []Member {
			ms := formed2x0()
			restarted(ms, "n2")
			// n2's pod answers with an ID n1 does not know at all: a new
			// node, not n2 at a new address.
			n2 := member(ms, "n2")
			n2.NodeID, n2.View.ID = "id-fresh", "id-fresh"
			return ms
		}, "Forget id=id-n2 on=[n1 n2] (forgetting departed node: id-n2)"},
		{"addresses current, nodes not yet ok: the cluster is not converged", func() []Member {
			ms := formed2x0()
			for _, n := range []string{"n1", "n2"} {
				member(ms, n).View.ClusterOK = false
			}
			return ms
		}, "Wait (waiting for the cluster to agree: not every node sees a complete, healthy cluster)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := tt.members()
			got := Plan(Input{Shards: len(ms) / 2, ReplicasPerShard: 1, Members: ms}).String()
			if len(ms) == 2 {
				got = Plan(Input{Shards: 2, Members: ms}).String()
			}
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// Nodes that say cluster_state:ok with every slot while they know each
// other only at old addresses are neither converged nor ready, and the
// cluster is returning; once every address is current it is none of
// these.
func TestStaleAddressIsNotMet(t *testing.T) {
	ms := formed3()
	if Returning(Input{Members: ms}) {
		t.Fatal("a formed cluster is returning")
	}
	restarted(ms, "n1", "n2", "n3", "n4", "n5", "n6")
	in := Input{Shards: 3, ReplicasPerShard: 1, Members: ms}
	if lead := Plan(in).Lead(); lead.Done() || lead.Kind != KindMeet {
		t.Errorf("lead %s, want a Meet", lead)
	}
	if s := Summarize(in); s.ReadyNodes != 0 {
		t.Errorf("%d ready nodes, want 0: no node reaches another", s.ReadyNodes)
	}
	if !Returning(in) {
		t.Error("not returning")
	}
	for i := range ms {
		for j := range ms[i].View.Peers {
			p := &ms[i].View.Peers[j]
			p.IP = newIP("n" + p.ID[len("id-n"):])
		}
	}
	if got := Plan(in).String(); got != "Done (cluster converged)" {
		t.Errorf("after the addresses moved: %s", got)
	}
	if Returning(in) {
		t.Error("still returning after the addresses moved")
	}
}

// A member that had run and whose pod is pending again is a persistent
// node coming back: the cluster is returning. A joining node's first pod
// is not.
func TestReturningMember(t *testing.T) {
	ms := formed3()
	n2 := member(ms, "n2")
	n2.Pod, n2.View, n2.PodCreated = Pod{Phase: PodPending}, nil, true
	if !Returning(Input{Members: ms}) {
		t.Error("an Active member back to a pending pod is not returning")
	}
	n2.Lifecycle = LifecycleJoining
	if Returning(Input{Members: ms}) {
		t.Error("a joining member's pending pod counts as returning")
	}

	// A full restart: every pod stops at once. Persistent members get
	// their pods again, so the cluster is on its way back, not Active;
	// without persistence a stopping pod is a node about to be lost.
	stopping := formed3()
	for i := range stopping {
		stopping[i].Pod.Phase, stopping[i].View = PodStopping, nil
	}
	if Returning(Input{Members: stopping}) {
		t.Error("members without a volume, stopping, count as returning")
	}
	for i := range stopping {
		stopping[i].ComesBack = true
	}
	if !Returning(Input{Members: stopping}) {
		t.Error("persistent members whose pods all stop are not returning")
	}
	one := formed3()
	member(one, "n2").Pod.Phase, member(one, "n2").ComesBack = PodStopping, true
	if !Returning(Input{Members: one}) {
		t.Error("a persistent member whose pod stops is not returning")
	}
}

// Every member answers, none is lost, addresses are current, yet a
// settled member says the cluster is down: the members are still coming
// together (failure flags clearing, Valkey's rejoin delay), so the cluster
// is returning. With a member lost it is being healed instead, and a
// joining member's own cluster_state says nothing of the cluster.
func TestReturningUntilEveryNodeSaysOK(t *testing.T) {
	ms := formed3()
	member(ms, "n4").View.ClusterOK = false
	if !Returning(Input{Members: ms}) {
		t.Error("a settled member says cluster_state:fail, yet not returning")
	}
	silent := formed3()
	member(silent, "n4").View.ClusterOK = false
	member(silent, "n5").View = nil
	if !Returning(Input{Members: silent}) {
		t.Error("a member whose pod runs but does not answer yet (loading its file) hides that another says cluster_state:fail")
	}
	kill(ms, "n6", true)
	if Returning(Input{Members: ms}) {
		t.Error("with a member lost the cluster is healed, not returning")
	}
	ms = formed3()
	member(ms, "n4").Lifecycle = LifecycleJoining
	member(ms, "n4").View.ClusterOK = false
	if Returning(Input{Members: ms}) {
		t.Error("a joining member's cluster_state:fail counts as returning")
	}
}
