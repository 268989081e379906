package valkey

import (
	"reflect"
	"testing"
)

const (
	id0 = "d4835202a04a3444827a39e41dde2515cad34182"
	id1 = "ccd449fa6dff14198af136337da7d79d493df4f3"
	id2 = "fe54e616c3096213c865aab4c9537796394cae65"
)

func TestParseClusterNodes(t *testing.T) {
	node0 := ClusterNode{
		ID: id0, Addr: "127.0.0.1:7100@17100", IP: "127.0.0.1", Port: 7100, BusPort: 17100,
		Hostname: "node-0.test.ns.svc.cluster.local", Flags: []string{FlagMyself, FlagPrimary},
		ConfigEpoch: 1, LinkState: linkConnected, Slots: []SlotRange{{Start: 0, End: 5460}, {Start: 10000, End: 16383}},
	}
	node1 := ClusterNode{
		ID: id1, Addr: "127.0.0.1:7101@17101", IP: "127.0.0.1", Port: 7101, BusPort: 17101,
		Hostname: "node-1.test.ns.svc.cluster.local", Flags: []string{FlagPrimary},
		PongRecv: 1796215713119, ConfigEpoch: 2, LinkState: linkConnected, Slots: []SlotRange{{Start: 5461, End: 9999}},
	}
	node2 := ClusterNode{
		ID: id2, Addr: "127.0.0.1:7102@17102", IP: "127.0.0.1", Port: 7102, BusPort: 17102,
		Hostname: "node-2.test.ns.svc.cluster.local", Flags: []string{FlagReplica}, PrimaryID: id0,
		PongRecv: 1796215714206, ConfigEpoch: 1, LinkState: linkConnected,
	}
	with := func(n ClusterNode, edit func(*ClusterNode)) ClusterNode { edit(&n); return n }

	tests := []struct {
		name    string
		text    string
		want    ClusterNodes
		wantErr bool
	}{
		{
			name: "healthy cluster with announced hostnames",
			text: sample(t, "cluster-nodes-healthy-8.0.1.txt"),
			want: ClusterNodes{node1, node2, node0},
		},
		{
			name: "handshake, possibly failed primary and a migrating slot",
			text: sample(t, "cluster-nodes-migrating-8.0.1.txt"),
			want: ClusterNodes{
				{
					ID: "66073aa19957be6bec03d7ec60d3e0905c0aafee", Addr: "127.0.0.1:7109@17109", IP: "127.0.0.1",
					Port: 7109, BusPort: 17109, Flags: []string{FlagHandshake}, LinkState: linkConnected,
				},
				with(node1, func(n *ClusterNode) {
					n.Flags = []string{FlagPrimary, FlagPFail}
					n.PingSent, n.PongRecv, n.LinkState = 1796215724041, 1796215721989, linkDisconnected
				}),
				with(node2, func(n *ClusterNode) { n.PongRecv = 1796215728270 }),
				with(node0, func(n *ClusterNode) { n.Migrating = map[int]string{12182: id1} }),
			},
		},
		{
			name: "importing slot",
			text: sample(t, "cluster-nodes-importing-8.0.1.txt"),
			want: ClusterNodes{with(node1, func(n *ClusterNode) {
				n.Flags = []string{FlagMyself, FlagPrimary}
				n.PongRecv = 0
				n.Importing = map[int]string{12182: id0}
			})},
		},
		{
			name: "nodes.conf with aux fields and vars line",
			text: sample(t, "nodes-conf-8.0.1.txt"),
			want: ClusterNodes{
				with(node1, func(n *ClusterNode) {
					n.Flags = []string{FlagPrimary, FlagPFail}
					n.PingSent, n.PongRecv, n.LinkState = 1796215724041, 1796215721989, linkDisconnected
					n.Aux = map[string]string{"tls-port": "0", "shard-id": "03d399cbc003cea06d9fcc62d73e551b41751a1f"}
				}),
				with(node2, func(n *ClusterNode) {
					n.PongRecv = 1796215732739
					n.Aux = map[string]string{"tls-port": "0", "shard-id": "c38e517052cf6284e72fd373af256cb885c069c0"}
				}),
				with(node0, func(n *ClusterNode) {
					n.Migrating = map[int]string{12182: id1}
					n.Aux = map[string]string{"tls-port": "0", "shard-id": "c38e517052cf6284e72fd373af256cb885c069c0"}
				}),
			},
		},
		{
			// Composed from the documented format: a forgotten address
			// prints as ":0@0", IPv6 without brackets.
			name: "noaddr, IPv6 and single slots",
			text: id1 + " :0@0 master,fail,noaddr - 1796215724041 1796215721989 2 disconnected 7\n" +
				id2 + " fd00::5:6379@16379 slave,nofailover " + id0 + " 0 1796215714206 1 connected\n",
			want: ClusterNodes{
				{
					ID: id1, Addr: ":0@0", Flags: []string{FlagPrimary, FlagFail, FlagNoAddr},
					PingSent: 1796215724041, PongRecv: 1796215721989, ConfigEpoch: 2, LinkState: linkDisconnected,
					Slots: []SlotRange{{Start: 7, End: 7}},
				},
				{
					ID: id2, Addr: "fd00::5:6379@16379", IP: "fd00::5", Port: 6379, BusPort: 16379,
					Flags: []string{FlagReplica, FlagNoFailover}, PrimaryID: id0, PongRecv: 1796215714206,
					ConfigEpoch: 1, LinkState: linkConnected,
				},
			},
		},
		{name: "empty", text: "", want: nil},
		{name: "too few fields", text: id0 + " 127.0.0.1:7100@17100 myself,master - 0 0\n", wantErr: true},
		{name: "bad slot", text: id0 + " 127.0.0.1:7100@17100 myself,master - 0 0 1 connected 0-99999\n", wantErr: true},
		{name: "bad slot state", text: id0 + " 127.0.0.1:7100@17100 myself,master - 0 0 1 connected [12182-?-x]\n", wantErr: true},
		{name: "bad port", text: id0 + " 127.0.0.1:port@17100 myself,master - 0 0 1 connected\n", wantErr: true},
		{name: "bad epoch", text: id0 + " 127.0.0.1:7100@17100 myself,master - 0 0 x connected\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lineEndings(t, tc.text, func(t *testing.T, text string) {
				got, err := parseClusterNodes(text)
				if (err != nil) != tc.wantErr {
					t.Fatalf("error = %v, wantErr %v", err, tc.wantErr)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("got\n%+v\nwant\n%+v", got, tc.want)
				}
			})
		})
	}
}

func TestClusterNodesQueries(t *testing.T) {
	nodes, err := parseClusterNodes(sample(t, "cluster-nodes-migrating-8.0.1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	me, ok := nodes.Myself()
	if !ok || me.ID != id0 || me.SlotCount() != 5461+6384 {
		t.Fatalf("Myself = %+v, %v", me, ok)
	}
	n1, ok := nodes.ByID(id1)
	if !ok || !n1.Failing() || !n1.IsPrimary() || n1.IsReplica() {
		t.Fatalf("ByID(node 1) = %+v, %v", n1, ok)
	}
	if _, ok := nodes.ByID("unknown"); ok {
		t.Fatal("ByID found an unknown node")
	}
	if r := nodes.replicasOf(id0); len(r) != 1 || r[0].ID != id2 {
		t.Fatalf("replicasOf(node 0) = %+v", r)
	}
	if got := formatSlotRanges(missingSlots(nodes.assignedSlots())); got != "" {
		t.Fatalf("missing slots %s", got)
	}
}
