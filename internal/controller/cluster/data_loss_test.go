package cluster

import (
	"testing"
	"time"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// lossFixture is a 2x1 cluster as its ValkeyNodes recorded it when last
// asked, with every pod in the given phase; a running member answers with
// the role and slots recorded.
func lossFixture(phases map[string]topology.PodPhase) *observed {
	recorded := []struct {
		name  string
		shard int32
		role  valkeyv1.NodeRole
		slots string
	}{
		{"cache-a", 0, valkeyv1.RolePrimary, "0-8191"},
		{"cache-b", 0, valkeyv1.RoleReplica, ""},
		{"cache-c", 1, valkeyv1.RolePrimary, "8192-10000,12000-16383"},
		{"cache-d", 1, valkeyv1.RoleReplica, ""},
	}
	o := &observed{nodes: map[string]*valkeyv1.ValkeyNode{}}
	for _, r := range recorded {
		n := &valkeyv1.ValkeyNode{Status: valkeyv1.ValkeyNodeStatus{NodeID: "id-" + r.name, Role: r.role, Slots: r.slots}}
		n.Name, n.Spec.ShardIndex = r.name, r.shard
		o.nodes[r.name] = n
		m := topology.Member{Name: r.name, ShardIndex: int(r.shard), NodeID: n.Status.NodeID, Pod: topology.Pod{Phase: phases[r.name]}}
		if m.Pod.Phase == topology.PodRunning {
			m.View = &topology.View{ID: n.Status.NodeID, Role: topology.RoleReplica}
			if r.role == valkeyv1.RolePrimary {
				m.View.Role, m.View.Slots = topology.RolePrimary, recordedSlots(n)
			}
		}
		o.members = append(o.members, m)
	}
	return o
}

func TestDeadWithKeys(t *testing.T) {
	gone, absent, running := topology.PodGone, topology.PodAbsent, topology.PodRunning
	everyPodGone := map[string]topology.PodPhase{"cache-a": gone, "cache-b": absent, "cache-c": absent, "cache-d": gone}
	tests := []struct {
		name   string
		phases map[string]topology.PodPhase
		node   string
		// mutate adjusts the observation before the check.
		mutate func(o *observed)
		want   string // the lost slots, "" for no loss
	}{
		{name: "every pod gone: the primary's slots", phases: everyPodGone, node: "cache-a", want: "0-8191"},
		{name: "every pod gone: a replica holds no slot", phases: everyPodGone, node: "cache-b"},
		{name: "the other shard still runs: only this shard's slots", node: "cache-c",
			phases: map[string]topology.PodPhase{"cache-a": running, "cache-b": running, "cache-c": gone, "cache-d": gone},
			want:   "8192-10000,12000-16383"},
		{name: "a running primary is not dead", phases: everyPodGone, node: "cache-a",
			mutate: func(o *observed) { o.members[0].Pod.Phase = running }},
		{name: "a stopping primary still holds its keys", phases: everyPodGone, node: "cache-a",
			mutate: func(o *observed) { o.members[0].Pod.Phase = topology.PodStopping }},
		{name: "slots another primary serves now are not lost", node: "cache-a",
			phases: map[string]topology.PodPhase{"cache-a": gone, "cache-b": running, "cache-c": running, "cache-d": running},
			mutate: func(o *observed) {
				// cache-b was promoted and serves 0-4000 of them.
				o.members[1].View.Role, o.members[1].View.Slots = topology.RolePrimary, []topology.SlotRange{{Start: 0, End: 4000}}
			},
			want: "4001-8191"},
		{name: "a loss already reported leaves no recorded slot", phases: everyPodGone, node: "cache-a",
			mutate: func(o *observed) { o.nodes["cache-a"].Status.Slots = "" }},
		{name: "no ValkeyNode", phases: everyPodGone, node: "cache-z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := lossFixture(tt.phases)
			if tt.mutate != nil {
				tt.mutate(o)
			}
			l, lost := deadWithKeys(o, tt.node)
			got := ""
			if lost {
				got = topology.FormatRanges(l.slots)
			}
			if got != tt.want {
				t.Fatalf("lost slots %q, want %q", got, tt.want)
			}
		})
	}

	l, _ := deadWithKeys(lossFixture(everyPodGone), "cache-c")
	at := time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC)
	want := "shard 1 lost its primary cache-c with no copy of its keys left at 2025-01-01T10:00:00Z: " +
		"the keys of slots 8192-10000,12000-16383 are gone; a fresh, empty primary serves them"
	if got := l.message(at); got != want || l.id != "id-cache-c" {
		t.Fatalf("message\ngot  %q\nwant %q (id %s)", got, want, l.id)
	}
}

// A forgotten primary's slots come from the survivors' views; when none of
// them lists any, from what its ValkeyNode recorded.
func TestLostShardSlots(t *testing.T) {
	forget := topology.Action{Kind: topology.KindForget, LosesData: true, Reason: topology.ReasonPrimaryLostNoReplica,
		Detail: "words for people", Forget: &topology.Forget{NodeID: "id-cache-a", Node: "cache-a"}}
	o := lossFixture(map[string]topology.PodPhase{"cache-a": topology.PodGone, "cache-c": topology.PodRunning})
	l, ok := lostShard(o, forget)
	if !ok || l.shard != 0 || topology.FormatRanges(l.slots) != "0-8191" {
		t.Fatalf("lostShard = %+v, %v; want shard 0, slots 0-8191 from the record", l, ok)
	}
	o.members[2].View.Peers = []topology.Peer{{ID: "id-cache-a", Slots: []topology.SlotRange{{Start: 0, End: 100}}}}
	if l, _ := lostShard(o, forget); topology.FormatRanges(l.slots) != "0-100" {
		t.Fatalf("slots %v, want the survivor's view 0-100", l.slots)
	}
}

func TestLostNodeIsTheEventsRelatedObject(t *testing.T) {
	n := &valkeyv1.ValkeyNode{}
	n.Name = "cache-a"
	o := &observed{nodes: map[string]*valkeyv1.ValkeyNode{"cache-a": n}}
	if got := o.lostNode(dataLoss{node: "cache-a"}); got != n {
		t.Fatalf("related object %v, want the lost primary's ValkeyNode", got)
	}
	// A missing node must be a nil interface, not a typed nil the
	// recorder would dereference.
	if got := o.lostNode(dataLoss{node: "cache-z"}); got != nil {
		t.Fatalf("related object %#v for a node without a ValkeyNode, want nil", got)
	}
}
