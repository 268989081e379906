package topology

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// missingReplica is formed2 without shard 1's replica: the repair creates
// one.
func missingReplica() []Member {
	return mesh(
		nd{name: "n1", shard: 0, slots: rs(0, 8191)},
		nd{name: "n2", shard: 1, slots: rs(8192, 16383)},
		nd{name: "n3", shard: 0, role: RoleReplica, primary: "n1"},
	)
}

// rolling is formed2 with every node outdated: the roll creates shard 0's
// replacement first.
func rolling() []Member {
	ms := formed2()
	for i := range ms {
		ms[i].Outdated = true
	}
	return ms
}

// rollFailover is formed2 with its primaries outdated: the roll fails
// shard 0 over onto its up-to-date replica.
func rollFailover() []Member {
	ms := formed2()
	member(ms, "n1").Outdated, member(ms, "n2").Outdated = true, true
	return ms
}

// rollWaiting is a roll whose replacement has not joined yet: the roll
// only waits.
func rollWaiting() []Member {
	ms := rolling()
	ms = append(ms, mesh(nd{name: "n5", shard: 0, life: LifecycleJoining, phase: PodPending})...)
	member(ms, "n5").JoinType = JoinReplica
	return ms
}

func lostReplica() []Member {
	ms := formed2()
	kill(ms, "n3", false)
	return ms
}

// A replacement backoff holds every node creation until it ends, a
// repair's included, and nothing else; the wait that stands for held
// creations keeps their tier and says when the next node comes.
func TestReplacementBackoffHold(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	backoff := ReplacementBackoff{Failures: 3, Until: now.Add(20 * time.Second)}
	const detail = "3 node container(s) exited in a row; the next node is created at 2026-01-01T12:00:20Z"
	tests := []struct {
		name    string
		members func() []Member
		shards  int
		backoff ReplacementBackoff
		want    string
		tier    Tier
		held    bool
	}{
		{"a new shard waits", formed2, 3, backoff,
			"Wait (" + ReasonReplacementBackoff + ": " + detail + ")", TierTopology, true},
		{"a lost replica's replacement waits", missingReplica, 2, backoff,
			"Wait (" + ReasonReplacementBackoff + ": " + detail + ")", TierStability, true},
		{"a roll's replacement waits", rolling, 2, backoff,
			"Wait (" + ReasonReplacementBackoff + ": " + detail + ")", TierUpdate, true},
		{"forgetting a lost node goes ahead", lostReplica, 2, backoff,
			"Forget id=id-n3 on=[n1 n2 n4] (forgetting departed node: n3)", TierStability, false},
		{"a roll's failover goes ahead", rollFailover, 2, backoff,
			"Failover node=n3 mode=default (" + ReasonRollFailover + ": n3 replaces n1)", TierUpdate, false},
		{"done is kept as it is", formed2, 2, backoff, "Done (cluster converged)", TierSteady, false},
		{"the backoff over, the node is created", missingReplica, 2, ReplacementBackoff{Failures: 3, Until: now},
			"CreateNode shard=1 join=\"replica\" (restoring replica count: shard 1)", TierStability, false},
		{"no failures, no hold", missingReplica, 2, ReplacementBackoff{},
			"CreateNode shard=1 join=\"replica\" (restoring replica count: shard 1)", TierStability, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := Plan(Input{Shards: tt.shards, ReplicasPerShard: 1, Members: tt.members(), Now: now, Backoff: tt.backoff})
			if w.String() != tt.want || w.Lead().Tier != tt.tier {
				t.Fatalf("got  %s in tier %s\nwant %s in tier %s", w, w.Lead().Tier, tt.want, tt.tier)
			}
			h, held := w.HeldBy(CauseReplacementBackoff)
			if held != tt.held || (len(w.Held) == 1) != tt.held {
				t.Fatalf("held %v (%v), want %v", held, w.Held, tt.held)
			}
			if held && (h.Detail != detail || w.Lead().Cause != CauseReplacementBackoff) {
				t.Fatalf("held with %+v, lead cause %s", h, w.Lead().Cause)
			}
		})
	}
}

// While the Valkey version check fails, node creations and every step of
// a roll wait, its own waits included, with the check's message; other
// repairs go ahead.
func TestHoldForVersion(t *testing.T) {
	const why = "ValkeyImage v (valkey/valkey:9.1.2) declares Valkey 8.0.1, but node n5 runs 9.1.2; no node is created until they agree"
	held := "Wait (" + ReasonHeldForVersion + ": " + why + ")"
	tests := []struct {
		name    string
		members func() []Member
		shards  int
		why     string
		want    string
		tier    Tier
	}{
		{"a roll's replacement waits", rolling, 2, why, held, TierUpdate},
		{"a roll's failover waits", rollFailover, 2, why, held, TierUpdate},
		{"a roll's own wait gives way to the hold", rollWaiting, 2, why, held, TierUpdate},
		{"a repair's creation waits", missingReplica, 2, why, held, TierStability},
		{"a new shard waits", formed2, 3, why, held, TierTopology},
		{"forgetting a lost node goes ahead", lostReplica, 2, why,
			"Forget id=id-n3 on=[n1 n2 n4] (forgetting departed node: n3)", TierStability},
		{"done is kept as it is", formed2, 2, why, "Done (cluster converged)", TierSteady},
		{"no mismatch, no hold", rollFailover, 2, "",
			"Failover node=n3 mode=default (" + ReasonRollFailover + ": n3 replaces n1)", TierUpdate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := Plan(Input{Shards: tt.shards, ReplicasPerShard: 1, Members: tt.members(), HoldForVersion: tt.why})
			if w.String() != tt.want || w.Lead().Tier != tt.tier {
				t.Fatalf("got  %s in tier %s\nwant %s in tier %s", w, w.Lead().Tier, tt.want, tt.tier)
			}
			if isHeld := w.String() == held; isHeld != (len(w.Held) == 1) || (isHeld && (w.Held[0] != w.Lead() || w.Lead().Cause != CauseHeldForVersion)) {
				t.Fatalf("holds %v for the wave %s", w.Held, w)
			}
		})
	}
}

// The holds apply in turn: a roll's replacement in a backoff and under a
// failed version check waits on the version check, which a person must
// fix, and both holds are listed.
func TestHoldsCombine(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	w := Plan(Input{Shards: 2, ReplicasPerShard: 1, Members: rolling(), Now: now,
		Backoff: ReplacementBackoff{Failures: 2, Until: now.Add(time.Second)}, HoldForVersion: "off"})
	if got, want := w.String(), "Wait ("+ReasonHeldForVersion+": off)"; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if _, ok := w.HeldBy(CauseReplacementBackoff); !ok || len(w.Held) != 2 {
		t.Fatalf("holds %v, want the backoff's and the version check's", w.Held)
	}
}

// A hold only takes actions out: what goes on is what the wave held, in
// its order, and a wave it leaves alone lists no hold.
func TestWaveWithout(t *testing.T) {
	create := Action{Kind: KindCreateNode, Tier: TierStability, CreateNode: &CreateNode{ShardIndex: 1}}
	del := Action{Kind: KindDeleteNode, Tier: TierStability, DeleteNode: &NodeRef{Node: "n4"}}
	isCreate := func(a Action) bool { return a.Kind == KindCreateNode }
	detail := func(first Action) string { return first.Detail + "held" }
	tests := []struct {
		name string
		wave Wave
		want string
		held int
	}{
		{"a creation among other actions goes, the rest stays", waveOf(create, del, create), "DeleteNode node=n4", 1},
		{"nothing to hold: the wave as it was", waveOf(del), "DeleteNode node=n4", 0},
		{"only creations: a wait in their tier", waveOf(create), "Wait (r: held)", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.wave.without(isCreate, CauseReplacementBackoff, "r", detail)
			if got.String() != tt.want || len(got.Held) != tt.held {
				t.Fatalf("got %s holding %v, want %s with %d hold(s)", got, got.Held, tt.want, tt.held)
			}
			if got.Lead().Kind == KindWait && (got.Lead().Tier != TierStability || got.Lead().Cause != CauseReplacementBackoff) {
				t.Fatalf("the wait %+v, want tier %s and cause %s", got.Lead(), TierStability, CauseReplacementBackoff)
			}
		})
	}
}

// Through random histories, every hold takes out of the wave the same
// tick plans without it exactly the actions it holds: what goes on is the
// rest of that wave, in its order; a wave left with nothing waits on the
// hold, a wave changed names the hold that changed it, and a wave left
// alone names none. Done stays Done and nothing else becomes it.
func TestHoldsOnlyTakeOut(t *testing.T) {
	type hold struct {
		name  string
		set   func(in *Input)
		keeps func(a Action) bool
	}
	holds := []hold{
		{"tls", func(in *Input) { in.HoldForTLS = true },
			func(a Action) bool { return a.Tier == TierStability }},
		{"backoff", func(in *Input) { in.Backoff = ReplacementBackoff{Failures: 2, Until: in.Now.Add(time.Second)} },
			func(a Action) bool { return a.Kind != KindCreateNode }},
		{"version", func(in *Input) { in.HoldForVersion = "off" },
			func(a Action) bool { return a.Kind != KindCreateNode && a.Tier != TierUpdate }},
		{"paused", func(in *Input) { in.Paused = true }, func(Action) bool { return false }},
	}
	each := slices.Clone(holds)
	holds = append(holds, hold{"all", func(in *Input) {
		for _, h := range each {
			h.set(in)
		}
	}, func(a Action) bool {
		for _, h := range each {
			if !h.keeps(a) {
				return false
			}
		}
		return true
	}})
	check := func(s *sim, in Input, wv Wave) {
		for _, h := range holds {
			held := in
			h.set(&held)
			hw := Plan(held)
			s.checkWave(hw)
			if hw.Done() != wv.Done() {
				s.fatalf("hold %s: %s, unheld %s", h.name, hw, wv)
			}
			var kept []string
			for _, a := range wv.Actions {
				if wv.Acts() && h.keeps(a) {
					kept = append(kept, a.String())
				}
			}
			switch {
			case hw.String() == wv.String():
				if len(hw.Held) > 0 || (wv.Acts() && len(kept) < len(wv.Actions)) {
					s.fatalf("hold %s left %s alone, listing holds %v", h.name, wv, hw.Held)
				}
			case len(hw.Held) == 0:
				s.fatalf("hold %s changed %s into %s without saying so", h.name, wv, hw)
			case len(kept) > 0:
				if got := strings.Split(hw.String(), "; "); !slices.Equal(got, kept) {
					s.fatalf("hold %s: %s, want the unheld wave's %v", h.name, hw, kept)
				}
			default:
				lead := hw.Lead()
				if lead.Kind != KindWait || !slices.ContainsFunc(hw.Held, func(w Action) bool { return w.Reason == lead.Reason && w.Cause == lead.Cause }) {
					s.fatalf("hold %s: %s is no wait of its holds %v", h.name, hw, hw.Held)
				}
			}
		}
	}
	seeds := 15
	if testing.Short() {
		seeds = 5
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			chaos(t, uint64(seed), check)
		})
	}
}

// While nodes the last waves created are missing from the view, nothing
// planned from it runs: a creation would be repeated, a repair would treat
// a shard as short. The wait keeps the held action's tier, so the state
// reads as before, and names the nodes; waits and Done stay as they are.
func TestHoldForUnseen(t *testing.T) {
	held := "Wait (" + ReasonNodesUnseen + ": n7, n8)"
	tests := []struct {
		name    string
		members func() []Member
		shards  int
		want    string
		tier    Tier
	}{
		{"a repair's creation waits", missingReplica, 2, held, TierStability},
		{"forgetting a lost node waits", lostReplica, 2, held, TierStability},
		{"a roll's replacement waits", rolling, 2, held, TierUpdate},
		{"a roll's failover waits", rollFailover, 2, held, TierUpdate},
		{"a new shard waits", formed2, 3, held, TierTopology},
		{"done is kept as it is", formed2, 2, "Done (cluster converged)", TierSteady},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := Plan(Input{Shards: tt.shards, ReplicasPerShard: 1, Members: tt.members(), Unseen: []string{"n7", "n8"}})
			if w.String() != tt.want || w.Lead().Tier != tt.tier {
				t.Fatalf("got  %s in tier %s\nwant %s in tier %s", w, w.Lead().Tier, tt.want, tt.tier)
			}
			if w.Acts() {
				t.Fatalf("the wave %s acts on a view without n7 and n8", w)
			}
			if isHeld := w.String() == held; isHeld != (len(w.Held) == 1) || (isHeld && w.Lead().Cause != CauseNodesUnseen) {
				t.Fatalf("holds %v for the wave %s", w.Held, w)
			}
			if clear := Plan(Input{Shards: tt.shards, ReplicasPerShard: 1, Members: tt.members()}); tt.want == held && !clear.Acts() {
				t.Fatalf("without unseen nodes the plan %s does not act: the case shows no hold", clear)
			}
		})
	}
}

// While the cluster is paused nothing runs, a repair included. The wave
// waits in the held action's tier, so the state reads as before, and its
// wait describes that action: status says what runs on resume. Waits and
// Done stay as they are, and a wave another hold emptied keeps that
// hold's wait, which says what to fix.
func TestHoldForPaused(t *testing.T) {
	paused := func(next string) string { return "Wait (" + ReasonPaused + ": " + next + ")" }
	tests := []struct {
		name    string
		members func() []Member
		shards  int
		version string
		want    string
		tier    Tier
		cause   WaitCause
	}{
		{"a repair's creation waits", missingReplica, 2, "",
			paused("restoring replica count: shard 1"), TierStability, CausePaused},
		{"forgetting a lost node waits", lostReplica, 2, "",
			paused("forgetting departed node: n3"), TierStability, CausePaused},
		{"a roll's replacement waits", rolling, 2, "",
			paused("creating replacement node: shard 0"), TierUpdate, CausePaused},
		{"a roll's failover waits", rollFailover, 2, "",
			paused(ReasonRollFailover + ": n3 replaces n1"), TierUpdate, CausePaused},
		{"a new shard waits", formed2, 3, "", paused("adding shard: shard 2"), TierTopology, CausePaused},
		{"a roll's own wait is kept as it is", rollWaiting, 2, "",
			"Wait (" + ReasonPodPending + ": n5)", TierUpdate, CausePodPending},
		{"done is kept as it is", formed2, 2, "", "Done (cluster converged)", TierSteady, CauseNone},
		{"a roll the version check emptied waits on the check", rolling, 2, "off",
			"Wait (" + ReasonHeldForVersion + ": off)", TierUpdate, CauseHeldForVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Shards: tt.shards, ReplicasPerShard: 1, Members: tt.members(), HoldForVersion: tt.version}
			clear := Plan(in)
			in.Paused = true
			w := Plan(in)
			if w.String() != tt.want || w.Lead().Tier != tt.tier || w.Lead().Cause != tt.cause {
				t.Fatalf("got  %s in tier %s (%s)\nwant %s in tier %s (%s)", w, w.Lead().Tier, w.Lead().Cause, tt.want, tt.tier, tt.cause)
			}
			_, held := w.HeldBy(CausePaused)
			holds := len(clear.Held)
			if held {
				holds++
			}
			if held != clear.Acts() || len(w.Held) != holds {
				t.Fatalf("holds %v for the wave %s, unpaused %s holding %v", w.Held, w, clear, clear.Held)
			}
			if held && (w.Lead() != w.Held[len(w.Held)-1] || w.Lead().Detail != clear.Lead().Describe()) {
				t.Fatalf("the wait %+v does not describe the held %s", w.Lead(), clear.Lead())
			}
		})
	}
}
