package topology

import "testing"

func TestBootstrapSteps(t *testing.T) {
	const S, R = 2, 1
	joining := func(name string, shard int) nd { return nd{name: name, shard: shard, life: LifecycleJoining} }
	tests := []struct {
		name    string
		members func() []Member
		want    string
	}{
		{"every node is created in one wave, shards in turn", func() []Member { return nil },
			`CreateNode shard=0 join="" (creating node: 1 of 4); CreateNode shard=1 join="" (creating node: 2 of 4); ` +
				`CreateNode shard=0 join="" (creating node: 3 of 4); CreateNode shard=1 join="" (creating node: 4 of 4)`},
		{"next node spreads to shard 1", func() []Member {
			return mesh(nd{name: "n1", shard: 0, life: LifecycleJoining, phase: PodPending})
		}, `CreateNode shard=1 join="" (creating node: 2 of 4); CreateNode shard=0 join="" (creating node: 3 of 4); CreateNode shard=1 join="" (creating node: 4 of 4)`},
		{"third node back to shard 0", func() []Member {
			return mesh(joining("n1", 0), joining("n2", 1))
		}, `CreateNode shard=0 join="" (creating node: 3 of 4); CreateNode shard=1 join="" (creating node: 4 of 4)`},
		{"a replica is not over-created", func() []Member {
			return mesh(joining("n1", 0), joining("n2", 1), joining("n3", 0))
		}, `CreateNode shard=1 join="" (creating node: 4 of 4)`},
		{"waits for every pod", func() []Member {
			return mesh(joining("n1", 0), joining("n2", 1), joining("n3", 0),
				nd{name: "n4", shard: 1, life: LifecycleJoining, phase: PodPending})
		}, `Wait (waiting for pod to run: n4)`},
		{"pod that cannot be scheduled blocks bootstrap", func() []Member {
			return mesh(joining("n1", 0), joining("n2", 1), joining("n3", 0),
				nd{name: "n4", shard: 1, life: LifecycleJoining, phase: PodPending, unsched: "0/3 nodes available"})
		}, `Wait (` + ReasonUnschedulable + `: n4: 0/3 nodes available)`},
		{"a pod that cannot be scheduled, its spec fixed since: the node is replaced", func() []Member {
			return mesh(joining("n1", 0), joining("n2", 1), joining("n3", 0),
				nd{name: "n4", shard: 1, life: LifecycleJoining, phase: PodPending, unsched: "0/3 nodes available", outdated: true})
		}, `DeleteNode node=n4 (` + ReasonReplaceUnplaceable + `: n4: 0/3 nodes available)`},
		{"a pending pod, its spec changed, but not refused by the scheduler: waited for", func() []Member {
			return mesh(joining("n1", 0), joining("n2", 1), joining("n3", 0),
				nd{name: "n4", shard: 1, life: LifecycleJoining, phase: PodPending, outdated: true})
		}, `Wait (waiting for pod to run: n4)`},
		{"pod running but not answering", func() []Member {
			return mesh(joining("n1", 0), joining("n2", 1), joining("n3", 0),
				nd{name: "n4", shard: 1, life: LifecycleJoining, noView: true})
		}, `Wait (waiting for node to answer: n4)`},
		{"a stranger meets every node, not one seed", func() []Member {
			ms := mesh(joining("n1", 0), joining("n2", 1), joining("n3", 0), joining("n4", 1))
			isolate(ms, "n4")
			return ms
		}, `Meet node=n4 seed=n1(10.1.0.1),n3(10.1.0.3),n2(10.1.0.2) (` + ReasonMeet + `: n4 meets n1, n3, n2)`},
		{"only the pairs not yet in touch meet", func() []Member {
			ms := mesh(joining("n1", 0), joining("n2", 1), joining("n3", 0), joining("n4", 1))
			isolate(ms, "n4")
			member(ms, "n4").View.Peers = []Peer{{ID: id("n1"), IP: ip("n1"), Role: RolePrimary}}
			return ms
		}, `Meet node=n4 seed=n3(10.1.0.3),n2(10.1.0.2) (` + ReasonMeet + `: n4 meets n3, n2)`},
		{"waits for the handshakes once every pair is in touch", func() []Member {
			ms := mesh(joining("n1", 0), joining("n2", 1), joining("n3", 0), joining("n4", 1))
			isolate(ms, "n4")
			for _, o := range []string{"n1", "n2", "n3"} {
				v := member(ms, "n4").View
				v.Peers = append(v.Peers, Peer{ID: id(o), IP: ip(o), Role: RolePrimary})
			}
			return ms
		}, `Wait (waiting for nodes to learn each other: n1)`},
		{"slots wait for agreement", func() []Member {
			ms := mesh(joining("n1", 0), joining("n2", 1), joining("n3", 0), joining("n4", 1))
			member(ms, "n2").View.SlotsAssigned = 5
			return ms
		}, `Wait (waiting for nodes to agree on assigned slots)`},
		{"every shard gets its contiguous range and its replicas in one wave", func() []Member {
			return mesh(joining("n1", 0), joining("n2", 1), joining("n3", 0), joining("n4", 1))
		}, `AddSlots node=n1 slots=0-8191 (assigning slots: shard 0); AddSlots node=n2 slots=8192-16383 (assigning slots: shard 1); ` +
			`Replicate node=n3 primary=n1(id-n1) (attaching replica: n3 follows n1); Replicate node=n4 primary=n2(id-n2) (attaching replica: n4 follows n2)`},
		{"then the next shard", func() []Member {
			return mesh(nd{name: "n1", shard: 0, life: LifecycleJoining, slots: rs(0, 8191)},
				joining("n2", 1), joining("n3", 0), joining("n4", 1))
		}, `AddSlots node=n2 slots=8192-16383 (assigning slots: shard 1); ` +
			`Replicate node=n3 primary=n1(id-n1) (attaching replica: n3 follows n1); Replicate node=n4 primary=n2(id-n2) (attaching replica: n4 follows n2)`},
		{"replica attaches to its shard's primary", func() []Member {
			return mesh(nd{name: "n1", shard: 0, life: LifecycleJoining, slots: rs(0, 8191)},
				nd{name: "n2", shard: 1, life: LifecycleJoining, slots: rs(8192, 16383)},
				joining("n3", 0), joining("n4", 1))
		}, `Replicate node=n3 primary=n1(id-n1) (attaching replica: n3 follows n1); Replicate node=n4 primary=n2(id-n2) (attaching replica: n4 follows n2)`},
		{"nodes flip to Active", func() []Member {
			return mesh(nd{name: "n1", shard: 0, life: LifecycleJoining, slots: rs(0, 8191)},
				nd{name: "n2", shard: 1, slots: rs(8192, 16383)},
				nd{name: "n3", shard: 0, role: RoleReplica, primary: "n1"},
				nd{name: "n4", shard: 1, life: LifecycleJoining, role: RoleReplica, primary: "n2"})
		}, `MarkActive node=n1 (` + ReasonCompletedJoin + `: n1); MarkActive node=n4 (` + ReasonCompletedJoin + `: n4)`},
		{"replica waits for initial sync", func() []Member {
			ms := mesh(nd{name: "n1", shard: 0, slots: rs(0, 8191)},
				nd{name: "n2", shard: 1, slots: rs(8192, 16383)},
				nd{name: "n3", shard: 0, role: RoleReplica, primary: "n1"},
				nd{name: "n4", shard: 1, life: LifecycleJoining, role: RoleReplica, primary: "n2"})
			member(ms, "n4").View.SyncDone = false
			return ms
		}, `Wait (waiting for initial sync: n4)`},
		{"formed", func() []Member {
			return mesh(nd{name: "n1", shard: 0, slots: rs(0, 8191)},
				nd{name: "n2", shard: 1, slots: rs(8192, 16383)},
				nd{name: "n3", shard: 0, role: RoleReplica, primary: "n1"},
				nd{name: "n4", shard: 1, role: RoleReplica, primary: "n2"})
		}, `Done (` + ReasonFormed + `)`},
		{"stale member of a previous incarnation is forgotten", func() []Member {
			ms := mesh(joining("n1", 0), joining("n2", 1), joining("n3", 0), joining("n4", 1))
			v := member(ms, "n2").View
			v.Peers = append(v.Peers, Peer{ID: "id-old", IP: "10.9.9.9", Role: RolePrimary})
			return ms
		}, `Forget id=id-old on=[n1 n2 n3 n4] (forgetting departed node: id-old)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Plan(Input{Shards: S, ReplicasPerShard: R, Creating: true, Members: tt.members()})
			if got := a.String(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
