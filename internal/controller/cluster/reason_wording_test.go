package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/events"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// wordingScenario is one representative tick: what the planner is given
// and the observation the reconciler reads the plan against.
type wordingScenario struct {
	name  string
	nodes []fixtureNode
	// change adjusts the members built from nodes.
	change func(ms []topology.Member) []topology.Member
	in     topology.Input
	// lead is the wave's lead action as "Kind/Cause", and loses how many
	// of its actions are reported lost, to pin that the scenario plans
	// what it is named for.
	lead  string
	loses int
}

// derived is everything the reconciler makes of a plan: what it reports
// lost, what it says of the backoff, when it looks again and whether it
// logs the wait, the state, and the status conditions and Events of the
// report, by type, status and reason (their messages quote the plan and
// may change with its wording).
type derived struct {
	losses     []string
	held       string
	after      time.Duration
	logged     bool
	state      valkeyv1.ClusterState
	conditions []string
	events     []string
}

func (d derived) String() string {
	type fields derived // without this method
	return fmt.Sprintf("%+v", fields(d))
}

func wordingScenarios(now time.Time) []wordingScenario {
	twoByZero := []fixtureNode{{name: "a", shard: 0, slots: slots(0, 8191)}, {name: "b", shard: 1, slots: slots(8192, 16383)}}
	joining := func(ns []fixtureNode) []fixtureNode {
		out := make([]fixtureNode, len(ns))
		for i, n := range ns {
			n.life, n.slots, n.replica = topology.LifecycleJoining, nil, ""
			out[i] = n
		}
		return out
	}
	outdated := func(names ...string) func(ms []topology.Member) []topology.Member {
		return func(ms []topology.Member) []topology.Member {
			for _, n := range names {
				ms = withMember(ms, n, func(m *topology.Member) { m.Outdated = true })
			}
			return ms
		}
	}
	exited := func(ms []topology.Member) []topology.Member {
		return withMember(lose(ms, "a", false), "a", func(m *topology.Member) { m.Pod.Exited = true })
	}
	steady := topology.Input{Shards: 2, ReplicasPerShard: 1, Now: now}
	with := func(in topology.Input, set func(in *topology.Input)) topology.Input {
		set(&in)
		return in
	}
	threeByOne := []fixtureNode{
		{name: "a", shard: 0, slots: slots(0, 5460)}, {name: "b", shard: 1, slots: slots(5461, 10922)},
		{name: "e", shard: 2, slots: slots(10923, 16383)},
		{name: "c", shard: 0, replica: "a"}, {name: "d", shard: 1, replica: "b"}, {name: "f", shard: 2, replica: "e"},
	}
	backoff := topology.ReplacementBackoff{Failures: 3, Until: now.Add(time.Minute)}
	return []wordingScenario{
		{name: "converged", nodes: twoByOne(), in: steady, lead: "Done/None"},
		{name: "bootstrap blocked by the scheduler", nodes: joining(twoByOne()),
			change: func(ms []topology.Member) []topology.Member {
				return withMember(ms, "d", func(m *topology.Member) {
					m.Pod, m.View = topology.Pod{Phase: topology.PodPending, Unschedulable: "0/3 nodes are available"}, nil
				})
			},
			in: with(steady, func(in *topology.Input) { in.Creating = true }), lead: "Wait/PodUnschedulable"},
		{name: "bootstrap assigning slots", nodes: joining(twoByOne()),
			in: with(steady, func(in *topology.Input) { in.Creating = true }), lead: "AddSlots/None"},
		{name: "a primary Valkey fails over", nodes: threeByOne,
			change: func(ms []topology.Member) []topology.Member { return lose(ms, "a", true) },
			in:     with(steady, func(in *topology.Input) { in.Shards = 3 }), lead: "Wait/AutoFailover"},
		{name: "a primary whose process exited", nodes: twoByOne(), change: exited, in: steady, lead: "Failover/None"},
		{name: "a failover asked for a second ago", nodes: twoByOne(),
			change: func(ms []topology.Member) []topology.Member {
				return withMember(exited(ms), "c", func(m *topology.Member) {
					m.FailoverRequested, m.FailoverRequestedMode = now.Add(-time.Second), topology.FailoverTakeover
				})
			},
			in: steady, lead: "Wait/FailoverInFlight"},
		{name: "a hand-over whose primary exited meanwhile", nodes: twoByOne(),
			change: func(ms []topology.Member) []topology.Member {
				return withMember(exited(ms), "c", func(m *topology.Member) { m.FailoverRequested = now.Add(-time.Second) })
			},
			in: steady, lead: "Failover/None"},
		{name: "a primary lost with no replica", nodes: twoByZero,
			change: func(ms []topology.Member) []topology.Member { return lose(ms, "b", true) },
			in:     topology.Input{Shards: 2, Now: now}, lead: "Forget/None", loses: 1},
		{name: "a replica lost", nodes: twoByOne(),
			change: func(ms []topology.Member) []topology.Member { return lose(ms, "c", false) },
			in:     steady, lead: "Forget/None"},
		{name: "a replica still syncing", nodes: twoByOne(),
			change: func(ms []topology.Member) []topology.Member {
				return withMember(ms, "d", func(m *topology.Member) { m.View.SyncDone = false })
			},
			in: steady, lead: "Wait/ReplicaSyncing"},
		{name: "a new shard", nodes: twoByOne(), in: with(steady, func(in *topology.Input) { in.Shards = 3 }), lead: "CreateNode/None"},
		{name: "a new shard's slots retried", nodes: append(twoByZero, fixtureNode{name: "e", shard: 2}),
			change: func(ms []topology.Member) []topology.Member {
				return withMember(ms, "a", func(m *topology.Member) { m.View.AtomicMigrationFailure = "the target refused" })
			},
			in: topology.Input{Shards: 3, AtomicMigration: true, Now: now}, lead: "MigrateSlots/None"},
		{name: "a roll's replacement", nodes: twoByOne(), change: outdated("a", "b", "c", "d"), in: steady, lead: "CreateNode/None"},
		{name: "a roll's failover", nodes: twoByOne(), change: outdated("a", "b"), in: steady, lead: "Failover/None"},
		{name: "a new shard in a backoff", nodes: twoByOne(),
			in: with(steady, func(in *topology.Input) { in.Shards, in.Backoff = 3, backoff }), lead: "Wait/ReplacementBackoff"},
		{name: "a repair during a backoff", nodes: twoByOne(),
			change: func(ms []topology.Member) []topology.Member { return lose(ms, "c", false) },
			in:     with(steady, func(in *topology.Input) { in.Backoff = backoff }), lead: "Forget/None"},
		{name: "a roll held by the version check", nodes: twoByOne(), change: outdated("a", "b", "c", "d"),
			in: with(steady, func(in *topology.Input) { in.HoldForVersion = "node c runs 9.1.2" }), lead: "Wait/HeldForVersion"},
		{name: "a roll waiting for its replacement to join", nodes: append(twoByOne(), fixtureNode{name: "e", shard: 0, replica: "a", life: topology.LifecycleJoining}),
			change: func(ms []topology.Member) []topology.Member {
				return withMember(outdated("a", "b", "c", "d")(ms), "e", func(m *topology.Member) { m.View.SyncDone = false })
			},
			in: steady, lead: "Wait/None"},
		{name: "a new shard while the TLS Secret is invalid", nodes: twoByOne(),
			in: with(steady, func(in *topology.Input) { in.Shards, in.HoldForTLS = 3, true }), lead: "Wait/HeldForTLS"},
		{name: "a repair while a created node is unseen", nodes: twoByOne(),
			change: func(ms []topology.Member) []topology.Member { return lose(ms, "c", false) },
			in:     with(steady, func(in *topology.Input) { in.Unseen = []string{"e"} }), lead: "Wait/NodesUnseen"},
		{name: "a roll waiting for its turn", nodes: twoByOne(), change: outdated("a", "b", "c", "d"),
			in: with(steady, func(in *topology.Input) { in.HoldRoll = "waiting for rollout slot" }), lead: "Wait/RolloutWaiting"},
		{name: "a new shard while paused", nodes: twoByOne(),
			in: with(steady, func(in *topology.Input) { in.Shards, in.Paused = 3, true }), lead: "Wait/Paused"},
		{name: "a repair while paused", nodes: twoByOne(),
			change: func(ms []topology.Member) []topology.Member { return lose(ms, "c", false) },
			in:     with(steady, func(in *topology.Input) { in.Paused = true }), lead: "Wait/Paused"},
	}
}

// derive runs the reconciler's readings of a plan: the loss check of
// every action, the backoff's word, the requeue and the report phase.
func derive(t *testing.T, sc wordingScenario, o *observed, wave topology.Wave) derived {
	t.Helper()
	var d derived
	for _, a := range wave.Actions {
		if l, ok := lostShard(o, a); ok {
			d.losses = append(d.losses, l.message(time.Time{}))
		}
	}
	d.held = backoffHeld(wave)
	lead := wave.Lead()
	if wave.Acts() {
		d.after = afterWave(wave).RequeueAfter
	} else {
		d.after, d.logged = afterWait(lead, 2*time.Second, 30*time.Second), loggedWait(lead)
	}
	vc := &valkeyv1.ValkeyCluster{}
	vc.Spec.Shards, vc.Spec.ReplicasPerShard = int32(sc.in.Shards), int32(sc.in.ReplicasPerShard)
	vc.Status.State = valkeyv1.StateActive
	if sc.in.Paused {
		vc.Annotations = map[string]string{valkeyv1.AnnotationPaused: "true"}
	}
	if sc.in.Creating {
		vc.Status.State = valkeyv1.StateCreating
		vc.Status.TargetSpec = &valkeyv1.TargetTopology{Shards: vc.Spec.Shards, ReplicasPerShard: vc.Spec.ReplicasPerShard}
	}
	rec := events.NewFakeRecorder(100)
	r := &Reconciler{Recorder: rec}
	s := &clusterScope{vc: vc, o: o, in: sc.in, wave: wave, creating: sc.in.Creating, held: d.held}
	if _, err := r.report(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	st := clusterStatus(vc.Status, vc.Generation, s.found)
	d.state = st.State
	for _, c := range st.Conditions {
		d.conditions = append(d.conditions, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	for len(rec.Events) > 0 {
		f := strings.Fields(<-rec.Events)
		d.events = append(d.events, strings.Join(f[:min(2, len(f))], " "))
	}
	return d
}

// reworded is wave with the Reason of every action and hold rewritten, and
// the Detail of every action: a hold's detail is the message it shows.
func reworded(wave topology.Wave) topology.Wave {
	out := topology.Wave{Actions: append([]topology.Action(nil), wave.Actions...), Held: append([]topology.Action(nil), wave.Held...)}
	for i := range out.Actions {
		out.Actions[i].Reason = fmt.Sprintf("reworded action %d", i)
		out.Actions[i].Detail = fmt.Sprintf("reworded detail %d", i)
	}
	for i := range out.Held {
		out.Held[i].Reason = fmt.Sprintf("reworded hold %d", i)
	}
	return out
}

// What the reconciler makes of a plan follows its typed fields (kind,
// tier, cause, LosesData, Retry, the holds), never the wording of its
// reasons: planned from representative inputs, every Reason of every
// action and hold rewritten, nothing it decides or reports changes.
func TestReasonWordingChangesNothing(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var seen derived
	for _, sc := range wordingScenarios(now) {
		t.Run(sc.name, func(t *testing.T) {
			ms := fixtureMembers(sc.nodes...)
			if sc.change != nil {
				ms = sc.change(ms)
			}
			sc.in.Members = ms
			o := fixtureObserved(ms, sc.nodes...)
			wave := topology.Plan(sc.in)
			if lead := fmt.Sprintf("%s/%s", wave.Lead().Kind, wave.Lead().Cause); lead != sc.lead {
				t.Fatalf("the plan %s leads with %s, want %s", wave, lead, sc.lead)
			}
			again := reworded(wave)
			if again.Lead().Describe() == wave.Lead().Describe() {
				t.Fatalf("rewording left the lead's sentence %q as it was", wave.Lead().Describe())
			}
			want, got := derive(t, sc, o, wave), derive(t, sc, o, again)
			if len(want.losses) != sc.loses {
				t.Fatalf("the plan %s reports %d losses, want %d", wave, len(want.losses), sc.loses)
			}
			if got.String() != want.String() {
				t.Fatalf("the plan %s reworded:\ngot  %s\nwant %s", wave, got, want)
			}
			seen.losses = append(seen.losses, want.losses...)
			seen.held += want.held
			seen.logged = seen.logged || want.logged
			seen.events = append(seen.events, fmt.Sprint(want.after))
		})
	}
	// The scenarios reach every reading that could follow the wording.
	if len(seen.losses) == 0 || seen.held == "" || !seen.logged {
		t.Errorf("no scenario reports a loss (%v), holds a creation (%q) or logs a wait (%v)", seen.losses, seen.held, seen.logged)
	}
	for _, after := range []time.Duration{afterAction, afterFailover, afterFailedMigration, afterStep, 2 * time.Second} {
		if !strings.Contains(strings.Join(seen.events, " "), fmt.Sprint(after)) {
			t.Errorf("no scenario looks again after %s (seen %v)", after, seen.events)
		}
	}
}
