package topology

import (
	"strings"
	"testing"
	"time"
)

func TestWaitCausesAreNamed(t *testing.T) {
	for _, c := range WaitCauses() {
		if c == CauseNone || strings.HasPrefix(c.String(), "WaitCause(") {
			t.Errorf("cause %d has no name", int(c))
		}
	}
}

// Every wait the planner names carries its cause, which is what status
// reads: the reason text alone decides nothing.
func TestNamedWaitsCarryTheirCause(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	joining := func(name string, shard int) nd { return nd{name: name, shard: shard, life: LifecycleJoining} }
	bootstrapWith := func(n4 nd) Input {
		return Input{Shards: 2, ReplicasPerShard: 1, Creating: true,
			Members: mesh(joining("n1", 0), joining("n2", 1), joining("n3", 0), n4)}
	}
	steady := func(shards int, setup func(ms []Member)) Input {
		ms := formed3()
		setup(ms)
		return Input{Shards: shards, ReplicasPerShard: 1, AtomicMigration: true, Members: ms, Now: now}
	}
	// newShard is a fourth shard wanted, with a hold set.
	newShard := func(hold func(in *Input)) Input {
		in := steady(4, func([]Member) {})
		hold(&in)
		return in
	}
	tests := []struct {
		name   string
		in     Input
		cause  WaitCause
		reason string
	}{
		{"bootstrap on an unschedulable pod",
			bootstrapWith(nd{name: "n4", shard: 1, life: LifecycleJoining, phase: PodPending, unsched: "0/3 nodes available"}),
			CausePodUnschedulable, ReasonUnschedulable},
		{"bootstrap on a pending pod",
			bootstrapWith(nd{name: "n4", shard: 1, life: LifecycleJoining, phase: PodPending}),
			CausePodPending, ReasonPodPending},
		{"bootstrap on a silent node",
			bootstrapWith(nd{name: "n4", shard: 1, life: LifecycleJoining, noView: true}),
			CauseNodeSilent, ReasonNodeSilent},
		{"a stopping replica",
			steady(3, func(ms []Member) { stopping(ms, "n4") }),
			CausePodStopping, ReasonPodStopping},
		{"a dead primary Valkey fails over",
			steady(3, func(ms []Member) { kill(ms, "n1", true) }),
			CauseAutoFailover, ReasonWaitAutoFailover},
		{"a requested failover",
			steady(3, func(ms []Member) { stopping(ms, "n1"); member(ms, "n4").FailoverRequested = now.Add(-time.Second) }),
			CauseFailoverInFlight, ReasonFailoverInFlight},
		{"a primary whose pod is missing while its peers reach it",
			steady(3, func(ms []Member) { member(ms, "n1").Pod.Phase, member(ms, "n1").View = PodAbsent, nil }),
			CausePodMissing, ReasonPodMissingButAnswers},
		{"a replica still loading",
			steady(3, func(ms []Member) { member(ms, "n5").View.SyncDone = false }),
			CauseReplicaSyncing, ReasonReplicaSyncing},
		{"a scale-in without headroom",
			steady(2, func(ms []Member) {
				for _, n := range []string{"n1", "n2", "n3"} {
					member(ms, n).View.Memory = Memory{Used: 70 << 20, Dataset: 68 << 20, Max: 100 << 20}
				}
			}),
			CauseScaleInNoHeadroom, ReasonScaleInNoHeadroom},
		{"a stalled primary its peers flag while it answers",
			steady(3, func(ms []Member) {
				for i := range ms {
					if v := ms[i].View; v != nil && ms[i].Name != "n3" {
						for j := range v.Peers {
							if v.Peers[j].ID == id("n3") {
								v.Peers[j].Fail = true
							}
						}
					}
				}
			}),
			CausePrimaryStalled, ReasonPrimaryFlaggedButRunning},
		{"an unscheduled replacement",
			steady(3, func(ms []Member) {
				kill(ms, "n6", true)
				member(ms, "n6").Pod = Pod{Phase: PodPending, Unschedulable: "0/3 nodes available"}
				member(ms, "n6").Lifecycle = LifecycleJoining
			}),
			CausePodUnschedulable, ReasonPodUnschedulable},
		{"a roll held by a fleet rollout",
			func() Input {
				in := steady(3, func(ms []Member) {
					for i := range ms {
						ms[i].Outdated = true
					}
				})
				in.HoldRoll = "waiting for rollout slot"
				return in
			}(),
			CauseRolloutWaiting, "waiting for rollout slot"},
		{"a new shard while the last wave's node is not in the view",
			newShard(func(in *Input) { in.Unseen = []string{"n9"} }),
			CauseNodesUnseen, ReasonNodesUnseen},
		{"a new shard while the TLS Secret is invalid",
			newShard(func(in *Input) { in.HoldForTLS = true }),
			CauseHeldForTLS, ReasonHeldForTLS},
		{"a replacement during a backoff",
			newShard(func(in *Input) { in.Backoff = ReplacementBackoff{Failures: 2, Until: now.Add(time.Second)} }),
			CauseReplacementBackoff, ReasonReplacementBackoff},
		{"a new shard while the version check fails",
			newShard(func(in *Input) { in.HoldForVersion = "node n1 runs 9.1.2" }),
			CauseHeldForVersion, ReasonHeldForVersion},
		{"a new shard while the cluster is paused",
			newShard(func(in *Input) { in.Paused = true }),
			CausePaused, ReasonPaused},
	}
	seen := map[WaitCause]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Plan(tt.in).Lead()
			if a.Kind != KindWait || a.Cause != tt.cause || a.Reason != tt.reason {
				t.Fatalf("got %s with cause %s, want a wait %q with cause %s", a, a.Cause, tt.reason, tt.cause)
			}
			seen[a.Cause] = true
		})
	}
	for _, c := range WaitCauses() {
		if !seen[c] {
			t.Errorf("no case shows the planner giving a wait cause %s", c)
		}
	}
}
