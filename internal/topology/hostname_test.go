package topology

import "testing"

// named gives every member the hostname it announces and every peer entry
// that name, as a TLS cluster's nodes report them once gossip has settled.
func named(ms []Member) []Member {
	for i := range ms {
		v := ms[i].View
		if v == nil {
			continue
		}
		v.Hostname = hostname(ms[i].Name)
		for k := range v.Peers {
			v.Peers[k].Hostname = hostname(nameOf(v.Peers[k].ID))
		}
	}
	return ms
}

func hostname(name string) string { return name + ".cache.ns.svc.cluster.local" }
func nameOf(id string) string     { return id[len("id-"):] }

// forgetName makes observer report the peer with no hostname, as Valkey
// does before the peer's own ping reaches it.
func forgetName(ms []Member, observer, peer string) {
	v := member(ms, observer).View
	for k := range v.Peers {
		if v.Peers[k].ID == id(peer) {
			v.Peers[k].Hostname = ""
		}
	}
}

// A node on a TLS cluster tells clients the endpoint "?" for a peer whose
// hostname it has not learnt, so a node is met only once every other node
// knows it by name and it knows every other by name.
func TestPeersMustKnowAnnouncedHostnames(t *testing.T) {
	joining := func() []Member {
		ms := named(mesh(
			nd{name: "n1", shard: 0, slots: rs(0, 16383)},
			nd{name: "n2", shard: 0, role: RoleReplica, primary: "n1"},
			nd{name: "n3", shard: 0, role: RoleReplica, primary: "n1", life: LifecycleJoining}))
		member(ms, "n3").JoinType = JoinReplica
		return ms
	}
	rolling := func() []Member {
		ms := named(formed3())
		member(ms, "n1").Outdated = true
		return ms
	}
	tests := []struct {
		name     string
		shards   int
		replicas int
		members  func() []Member
		want     string
	}{
		{"every name known: converged", 3, 1, func() []Member { return named(formed3()) }, "Done (cluster converged)"},
		{"a synced joining replica every node can name is activated", 1, 2, joining,
			"MarkActive node=n3 (completed join: n3)"},
		{"a joining replica a peer cannot name yet is not activated", 1, 2, func() []Member {
			ms := joining()
			forgetName(ms, "n2", "n3")
			return ms
		}, "Wait (waiting for node to finish Joining: n3)"},
		{"a joining replica that cannot name a peer yet is not activated", 1, 2, func() []Member {
			ms := joining()
			forgetName(ms, "n3", "n1")
			return ms
		}, "Wait (waiting for node to finish Joining: n3)"},
		{"a roll hands a shard to a replica every node can name", 3, 1, rolling,
			"Failover node=n4 mode=default (" + ReasonRollFailover + ": n4 replaces n1)"},
		{"a roll waits while a peer has lost the replica's name", 3, 1, func() []Member {
			ms := rolling()
			forgetName(ms, "n6", "n4")
			return ms
		}, "Wait (" + ReasonPeerNameUnknown + ": n4)"},
		{"a new primary a peer cannot name receives no slot", 4, 1, func() []Member {
			ms := named(mesh(append(formed3Nodes(),
				nd{name: "n7", shard: 3},
				nd{name: "n8", shard: 3, role: RoleReplica, primary: "n7"})...))
			forgetName(ms, "n2", "n7")
			return ms
		}, "Wait (shard has no slot-holding primary: 3)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Shards: tt.shards, ReplicasPerShard: tt.replicas, AtomicMigration: true, Members: tt.members()}
			if got := Plan(in).String(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
