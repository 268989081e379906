package cluster

import (
	"fmt"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// fixtureNode describes one member of a hand-built cluster whose members
// all know each other.
type fixtureNode struct {
	name    string
	shard   int
	replica string // the primary a replica follows; "" for a primary
	slots   []topology.SlotRange
	life    topology.Lifecycle
	phase   topology.PodPhase
}

func fixtureID(name string) string { return "id-" + name }

// fixtureMembers builds the members of a cluster whose running nodes see
// each other and agree on the slots.
func fixtureMembers(nodes ...fixtureNode) []topology.Member {
	assigned := 0
	for _, n := range nodes {
		assigned += topology.CountSlots(n.slots)
	}
	role := func(n fixtureNode) topology.Role {
		if n.replica != "" {
			return topology.RoleReplica
		}
		return topology.RolePrimary
	}
	running := func(n fixtureNode) bool { return n.phase == "" || n.phase == topology.PodRunning }
	var out []topology.Member
	for i, n := range nodes {
		m := topology.Member{Name: n.name, ShardIndex: n.shard, Lifecycle: n.life, NodeID: fixtureID(n.name),
			PodCreated: true, Pod: topology.Pod{Phase: n.phase}}
		if m.Lifecycle == "" {
			m.Lifecycle = topology.LifecycleActive
		}
		if running(n) {
			m.Pod.Phase, m.Pod.IP = topology.PodRunning, fmt.Sprintf("10.9.0.%d", i+1)
			v := &topology.View{ID: fixtureID(n.name), Role: role(n), Slots: n.slots, SlotsAssigned: assigned,
				ClusterOK: assigned == topology.TotalSlots}
			if n.replica != "" {
				v.PrimaryID, v.LinkUp, v.SyncDone, v.HoldsData = fixtureID(n.replica), true, true, true
			}
			for j, o := range nodes {
				if j == i || !running(o) {
					continue
				}
				p := topology.Peer{ID: fixtureID(o.name), IP: fmt.Sprintf("10.9.0.%d", j+1), Role: role(o), Slots: o.slots}
				if o.replica != "" {
					p.PrimaryID = fixtureID(o.replica)
				}
				v.Peers = append(v.Peers, p)
			}
			m.View = v
		}
		out = append(out, m)
	}
	return out
}

// fixtureObserved is the observation of members, with a ValkeyNode for
// each as it recorded itself when last asked.
func fixtureObserved(members []topology.Member, nodes ...fixtureNode) *observed {
	o := &observed{nodes: map[string]*valkeyv1.ValkeyNode{}, members: members}
	for _, n := range nodes {
		vn := &valkeyv1.ValkeyNode{}
		vn.Name, vn.Spec.ShardIndex, vn.Status.NodeID = n.name, int32(n.shard), fixtureID(n.name)
		vn.Status.Role = valkeyv1.RolePrimary
		if n.replica != "" {
			vn.Status.Role = valkeyv1.RoleReplica
		}
		vn.Status.Slots = topology.FormatRanges(n.slots)
		o.nodes[n.name] = vn
	}
	return o
}

func slots(a, b int) []topology.SlotRange { return []topology.SlotRange{{Start: a, End: b}} }

// twoByOne is a converged cluster of two shards with a replica each.
func twoByOne() []fixtureNode {
	return []fixtureNode{
		{name: "a", shard: 0, slots: slots(0, 8191)},
		{name: "b", shard: 1, slots: slots(8192, 16383)},
		{name: "c", shard: 0, replica: "a"},
		{name: "d", shard: 1, replica: "b"},
	}
}

// oneShard is a converged cluster of one primary.
func oneShard() []topology.Member {
	return fixtureMembers(fixtureNode{name: "a", shard: 0, slots: slots(0, 16383)})
}

// withMember changes one member of ms in place.
func withMember(ms []topology.Member, name string, change func(m *topology.Member)) []topology.Member {
	for i := range ms {
		if ms[i].Name == name {
			change(&ms[i])
		}
	}
	return ms
}

// lose makes name's process gone and flags it failed (fail) or possibly
// failed in every other view.
func lose(ms []topology.Member, name string, fail bool) []topology.Member {
	for i := range ms {
		if ms[i].Name == name {
			ms[i].Pod, ms[i].View = topology.Pod{Phase: topology.PodGone}, nil
			continue
		}
		if v := ms[i].View; v != nil {
			for j := range v.Peers {
				if v.Peers[j].ID == fixtureID(name) {
					v.Peers[j].Fail, v.Peers[j].PFail = fail, !fail
				}
			}
		}
	}
	return ms
}
