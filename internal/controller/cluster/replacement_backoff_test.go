package cluster

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

func TestReplacementBackoff(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	nodes := map[string]*valkeyv1.ValkeyNode{"a": {}, "b": {}}
	exited := func(n string) containerFailure {
		return containerFailure{node: n, reason: valkeyv1.ReasonContainerExited, exited: true}
	}

	rec := countFailures(replacementRecord{}, []containerFailure{exited("a")}, nodes, t0)
	if rec.Failures != 1 || rec.delay() != 0 {
		t.Fatalf("after one failure: %+v delay %v, want an immediate replacement", rec, rec.delay())
	}
	// Seen again on the next tick: not counted twice.
	rec = countFailures(rec, []containerFailure{exited("a")}, nodes, t0.Add(time.Second))
	if rec.Failures != 1 || !rec.Last.Equal(t0) {
		t.Fatalf("the same failure counted again: %+v", rec)
	}
	// A waiting container is not a lost node.
	rec = countFailures(rec, []containerFailure{{node: "b", reason: "ImagePullBackOff"}}, nodes, t0)
	if rec.Failures != 1 {
		t.Fatalf("a waiting container counted: %+v", rec)
	}
	// a is gone (deleted), b fails: the second failure in a row waits.
	delete(nodes, "a")
	t1 := t0.Add(5 * time.Second)
	rec = countFailures(rec, []containerFailure{exited("b")}, nodes, t1)
	if rec.Failures != 2 || rec.delay() != replacementBackoffBase || len(rec.Counted) != 1 {
		t.Fatalf("after two failures: %+v delay %v, want %v and only b remembered", rec, rec.delay(), replacementBackoffBase)
	}
	if b := rec.backoff(); b.Failures != 2 || !b.Until.Equal(t1.Add(replacementBackoffBase)) {
		t.Fatalf("the planner's backoff %+v, want 2 failures until %s", b, t1.Add(replacementBackoffBase))
	}
	var delays []time.Duration
	for f := 2; f <= 10; f++ {
		delays = append(delays, replacementRecord{Failures: f}.delay())
	}
	for i := 1; i < len(delays); i++ {
		if delays[i] < delays[i-1] || delays[i] > replacementBackoffMax {
			t.Fatalf("delays %v: want non-decreasing and at most %v", delays, replacementBackoffMax)
		}
	}
	if delays[1] != 2*replacementBackoffBase || delays[len(delays)-1] != replacementBackoffMax {
		t.Fatalf("delays %v: want doubling from %v to %v", delays, replacementBackoffBase, replacementBackoffMax)
	}
}

// The record a reconcile keeps: parsed from the annotation, counted, and
// dropped once the plan is Done; a record that does not parse is dropped.
func TestReplacementRecordKept(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	stored := replacementRecord{Failures: 3, Last: t0, Counted: []string{"a"}}
	raw, err := json.Marshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	withAnnotation := func(v string) *valkeyv1.ValkeyCluster {
		return &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{valkeyv1.AnnotationReplacementBackoff: v}}}
	}
	done := topology.Wave{Actions: []topology.Action{{Kind: topology.KindDone, Tier: topology.TierSteady}}}
	waiting := topology.Wave{Actions: []topology.Action{{Kind: topology.KindWait, Tier: topology.TierStability}}}
	tests := []struct {
		name     string
		vc       *valkeyv1.ValkeyCluster
		wave     topology.Wave
		failures int
	}{
		{"a stored record is read and kept while the cluster is not converged", withAnnotation(string(raw)), waiting, 3},
		{"a converged cluster starts over", withAnnotation(string(raw)), done, 0},
		{"a record that does not parse starts over", withAnnotation("{"), waiting, 0},
		{"no record", &valkeyv1.ValkeyCluster{}, waiting, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := replacementRecordOf(tt.vc).settled(tt.wave); got.Failures != tt.failures {
				t.Fatalf("record %+v, want %d failures", got, tt.failures)
			}
		})
	}
}

// ContainersHealthy says the backoff holds creations exactly when the
// planner held one this tick, whether the wave waits on it or goes on
// with other actions.
func TestBackoffHeld(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	in := func(shards int, until time.Time) topology.Input {
		return topology.Input{Shards: shards, ReplicasPerShard: 0, Members: oneShard(), Now: now,
			Backoff: topology.ReplacementBackoff{Failures: 2, Until: until}}
	}
	const msg = "2 node container(s) exited in a row; the next node is created at 2025-01-01T00:00:10Z"
	tests := []struct {
		name string
		in   topology.Input
		want string
	}{
		{"a new shard's creation held", in(2, now.Add(10*time.Second)), msg},
		{"the backoff over", in(2, now), ""},
		{"nothing to create", in(1, now.Add(10*time.Second)), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := backoffHeld(topology.Plan(tt.in)); got != tt.want {
				t.Fatalf("held %q, want %q", got, tt.want)
			}
		})
	}
}
