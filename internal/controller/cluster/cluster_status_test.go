package cluster

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

func TestResharding(t *testing.T) {
	moving := []topology.MoveSummary{{From: "a", To: "d", Slots: []topology.SlotRange{{Start: 0, End: 99}}, Method: topology.MigrationAtomic}}
	tests := []struct {
		name string
		prev *valkeyv1.ReshardingStatus
		s    topology.Summary
		want string // progress, "" for no status
		n    int    // moves listed
	}{
		{"balanced and idle: no status", nil, topology.Summary{}, "", 0},
		{"a change begins", nil, topology.Summary{SlotsToMove: 4096, Moving: moving}, "0/4096 slots", 1},
		{"half way", &valkeyv1.ReshardingStatus{SlotsTotal: 4096}, topology.Summary{SlotsToMove: 2048}, "2048/4096 slots", 0},
		{"the last move in flight", &valkeyv1.ReshardingStatus{SlotsTotal: 4096}, topology.Summary{Moving: moving}, "4096/4096 slots", 1},
		{"the spec grows mid-way", &valkeyv1.ReshardingStatus{SlotsTotal: 100}, topology.Summary{SlotsToMove: 5000}, "0/5000 slots", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := resharding(tt.prev, tt.s)
			if tt.want == "" {
				if got != nil {
					t.Fatalf("got %+v, want none", got)
				}
				return
			}
			if got == nil || got.Progress != tt.want || len(got.Moving) != tt.n {
				t.Fatalf("got %+v, want progress %q with %d moves", got, tt.want, tt.n)
			}
		})
	}
	got := resharding(nil, topology.Summary{SlotsToMove: 100, Moving: moving})
	if m := got.Moving[0]; m.Source != "a" || m.Target != "d" || m.Slots != "0-99" || m.SlotCount != 100 || m.Method != "atomic" {
		t.Errorf("move %+v", m)
	}
}

// A cluster owing a roll, or whose members know each other at old
// addresses, is Updating whatever its planner does first.
func TestDecideStateOwedRoll(t *testing.T) {
	repair := topology.Action{Kind: topology.KindDeleteNode, Tier: topology.TierStability}
	done := topology.Action{Kind: topology.KindDone, Tier: topology.TierSteady}
	current := &observed{members: []topology.Member{{Name: "a"}, {Name: "b"}}}
	owed := &observed{members: []topology.Member{{Name: "a"}, {Name: "b", Outdated: true}}}
	returning := &observed{members: []topology.Member{{Name: "a", Lifecycle: topology.LifecycleActive, PodCreated: true,
		Pod: topology.Pod{Phase: topology.PodPending}}}}
	joining := &observed{members: []topology.Member{{Name: "a", Lifecycle: topology.LifecycleJoining, PodCreated: true,
		Pod: topology.Pod{Phase: topology.PodPending}}}}
	// a and b kept their node IDs across new pods; b knows a at a's old
	// address.
	scattered := &observed{members: []topology.Member{
		{Name: "a", Pod: topology.Pod{Phase: topology.PodRunning, IP: "10.0.0.3"}, View: &topology.View{ID: "id-a",
			Peers: []topology.Peer{{ID: "id-b", IP: "10.0.0.4"}}}},
		{Name: "b", Pod: topology.Pod{Phase: topology.PodRunning, IP: "10.0.0.4"}, View: &topology.View{ID: "id-b",
			Peers: []topology.Peer{{ID: "id-a", IP: "10.0.0.1"}}}},
	}}
	tests := []struct {
		name string
		lead topology.Action
		o    *observed
		want topology.State
	}{
		{"a repair on a current cluster", repair, current, topology.StateActive},
		{"a repair while a roll is owed", repair, owed, topology.StateUpdating},
		{"converged", done, current, topology.StateActive},
		{"a repair while members know each other at old addresses", repair, scattered, topology.StateUpdating},
		{"a repair while an Active member's pod is pending again", repair, returning, topology.StateUpdating},
		{"a repair while a joining member's pod is pending", repair, joining, topology.StateActive},
		{"creating stays creating", repair, owed, topology.StateCreating},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideState(tt.want == topology.StateCreating, tt.lead, tt.o); got != tt.want {
				t.Errorf("state %s, want %s", got, tt.want)
			}
		})
	}
}

// Degraded is True only for a repair. While bootstrap runs it is False but
// does not claim that every shard has a healthy primary, which a cluster
// without one yet would contradict in `kubectl valkey status`.
func TestApplyPlanDegraded(t *testing.T) {
	create := topology.Action{Kind: topology.KindCreateNode, Tier: topology.TierBootstrap, Reason: "creating node"}
	addSlots := topology.Action{Kind: topology.KindAddSlots, Tier: topology.TierBootstrap, Reason: "assigning slots"}
	repair := topology.Action{Kind: topology.KindFailover, Tier: topology.TierStability, Reason: "primary lost", Detail: "c-00000"}
	done := topology.Action{Kind: topology.KindDone, Tier: topology.TierSteady}
	tests := []struct {
		name      string
		creating  bool
		primaries int32
		lead      topology.Action
		status    metav1.ConditionStatus
		reason    string
		message   string
	}{
		{"bootstrap, no primary yet", true, 0, create, metav1.ConditionFalse, valkeyv1.ReasonBootstrapping,
			"bootstrap in progress: 0 of 3 shards have a primary serving slots; nothing has failed"},
		{"bootstrap, some primaries", true, 2, addSlots, metav1.ConditionFalse, valkeyv1.ReasonBootstrapping,
			"bootstrap in progress: 2 of 3 shards have a primary serving slots; nothing has failed"},
		{"bootstrap, a repair", true, 2, repair, metav1.ConditionTrue, actionReason(repair), "primary lost: c-00000"},
		{"formed by this pass", true, 3, done, metav1.ConditionFalse, valkeyv1.ReasonHealthy,
			"every shard has a healthy primary and its replicas"},
		{"formed, converged", false, 3, done, metav1.ConditionFalse, valkeyv1.ReasonHealthy,
			"every shard has a healthy primary and its replicas"},
		{"formed, a repair", false, 2, repair, metav1.ConditionTrue, actionReason(repair), "primary lost: c-00000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vc := &valkeyv1.ValkeyCluster{Spec: valkeyv1.ValkeyClusterSpec{Shards: 3, ReplicasPerShard: 1}}
			vc.Status.State = valkeyv1.StateActive
			if tt.creating {
				vc.Status.State = valkeyv1.StateCreating
				vc.Status.TargetSpec = &valkeyv1.TargetTopology{Shards: 3, ReplicasPerShard: 1}
			}
			vc.Status.Shards = tt.primaries
			b := statusBuilder{st: vc.Status}
			b.planned(tt.lead, topology.DecideState(tt.creating, tt.lead), 3)
			vc.Status = b.st
			c := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondDegraded)
			if c == nil {
				t.Fatal("no Degraded condition")
			}
			if c.Status != tt.status || c.Reason != tt.reason || c.Message != tt.message {
				t.Errorf("Degraded %s %s %q, want %s %s %q", c.Status, c.Reason, c.Message, tt.status, tt.reason, tt.message)
			}
		})
	}
}

// Ready=False names the reason: Bootstrapping only while the cluster is
// being created; a formed cluster says what the planner is doing about it.
func TestReadyReason(t *testing.T) {
	repair := topology.Action{Kind: topology.KindFailover, Tier: topology.TierStability, Reason: "primary lost", Detail: "c-00000"}
	wait := topology.Action{Kind: topology.KindWait, Tier: topology.TierStability, Reason: topology.ReasonUnschedulable, Detail: "c-00001"}
	create := topology.Action{Kind: topology.KindCreateNode, Tier: topology.TierBootstrap, Reason: "creating node"}
	for _, tt := range []struct {
		name  string
		ready bool
		state topology.State
		lead  topology.Action
		want  string
	}{
		{"formed and done", true, topology.StateActive, topology.Action{Kind: topology.KindDone}, valkeyv1.ReasonFormed},
		{"being created", false, topology.StateCreating, create, valkeyv1.ReasonBootstrapping},
		{"formed, a repair", false, topology.StateUpdating, repair, actionReason(repair)},
		{"formed, a pod that cannot be scheduled", false, topology.StateUpdating, wait, actionReason(wait)},
	} {
		if got := readyReason(tt.ready, tt.state, tt.lead); got != tt.want {
			t.Errorf("%s: Ready reason %q, want %q", tt.name, got, tt.want)
		}
		if !tt.ready && tt.state != topology.StateCreating && readyReason(tt.ready, tt.state, tt.lead) == valkeyv1.ReasonBootstrapping {
			t.Errorf("%s: a formed cluster says Bootstrapping", tt.name)
		}
	}
}
