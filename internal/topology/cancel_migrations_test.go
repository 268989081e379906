package topology

import "testing"

// A scale-out undone while its CLUSTER MIGRATESLOTS jobs run cancels them
// on every source at once; a scale-out still wanted lets them run.
func TestCancelReversedMigrations(t *testing.T) {
	exporting := func() []Member {
		ms := mesh(
			nd{name: "n1", shard: 0, slots: rs(0, 5460)},
			nd{name: "n2", shard: 1, slots: rs(5461, 10922)},
			nd{name: "n3", shard: 2, slots: rs(10923, 16383)},
			nd{name: "n4", shard: 3},
		)
		for name, slots := range map[string][]SlotRange{"n1": rs(4096, 5460), "n2": rs(9557, 10922), "n3": rs(15018, 16383)} {
			v := member(ms, name).View
			v.AtomicMigrationInFlight = true
			v.Exports = []Export{{TargetID: id("n4"), Slots: slots}}
		}
		member(ms, "n4").View.AtomicMigrationInFlight = true
		return ms
	}
	cancel := func(src, slots string) string {
		return "CancelMigrations node=" + src + " (" + ReasonCancelReversed + ": " + src + " -> n4 slots " + slots + ")"
	}
	tests := []struct {
		name   string
		shards int
		setup  func(ms []Member)
		want   string
	}{
		{"still wanted: the jobs run", 4, func([]Member) {},
			"Wait (slot migration in progress: n1)"},
		{"undone: every source cancels", 3, func([]Member) {},
			cancel("n1", "4096-5460") + "; " + cancel("n2", "9557-10922") + "; " + cancel("n3", "15018-16383")},
		{"a target being retired gets nothing more", 4, func(ms []Member) { member(ms, "n4").Lifecycle = LifecycleLeaving },
			cancel("n1", "4096-5460") + "; " + cancel("n2", "9557-10922") + "; " + cancel("n3", "15018-16383")},
		{"a target that only stopped answering may resume: the jobs stay", 4, func(ms []Member) { member(ms, "n4").View = nil },
			"Wait (slot migration in progress: n1)"},
	}
	t.Run("a target no longer a member gets nothing more", func(t *testing.T) {
		var ms []Member
		for _, m := range exporting() {
			if m.Name == "n4" {
				continue
			}
			if v := m.View; v != nil {
				var peers []Peer
				for _, p := range v.Peers {
					if p.ID != id("n4") {
						peers = append(peers, p)
					}
				}
				v.Peers = peers
			}
			ms = append(ms, m)
		}
		gone := func(src, slots string) string {
			return "CancelMigrations node=" + src + " (" + ReasonCancelReversed + ": " + src + " -> id-n4 slots " + slots + ")"
		}
		want := gone("n1", "4096-5460") + "; " + gone("n2", "9557-10922") + "; " + gone("n3", "15018-16383")
		if got := Plan(Input{Shards: 3, AtomicMigration: true, Members: ms}); got.String() != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := exporting()
			tt.setup(ms)
			got := Plan(Input{Shards: tt.shards, AtomicMigration: true, Members: ms})
			if got.String() != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
