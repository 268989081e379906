package controller

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

func podWith(name string, cs corev1.ContainerState) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{
		ContainerStatuses: []corev1.ContainerStatus{{Name: "valkey", State: cs}},
	}}
}

// withExporter adds an exporter container in state cs, listed before the
// Valkey container as a kubelet may list it.
func withExporter(p *corev1.Pod, cs corev1.ContainerState) *corev1.Pod {
	p.Status.ContainerStatuses = append([]corev1.ContainerStatus{{Name: "exporter", State: cs}}, p.Status.ContainerStatuses...)
	return p
}

func TestContainerFailures(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	exporterExited := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}}
	deleting := podWith("c-stopping", corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"}})
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	o := &observed{
		nodes: map[string]*valkeyv1.ValkeyNode{},
		pods: map[string]*corev1.Pod{
			"c-pull":     podWith("c-pull", corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "valkey:nope"`}}),
			"c-oom":      podWith("c-oom", corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}),
			"c-conf":     podWith("c-conf", corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "Bad directive or wrong number of arguments"}}),
			"c-starting": podWith("c-starting", corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}),
			"c-running":  podWith("c-running", corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}),
			"c-done":     podWith("c-done", corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}),
			"c-stopping": deleting,
			// An exporter that exits is reported but loses no node.
			"c-exporter": withExporter(podWith("c-exporter", running), exporterExited),
			// Both failing: the Valkey container's failure is the one told.
			"c-both":    withExporter(podWith("c-both", corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}), exporterExited),
			"other-pod": podWith("other-pod", corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}),
		},
	}
	for name := range o.pods {
		if name != "other-pod" {
			o.nodes[name] = &valkeyv1.ValkeyNode{}
		}
	}
	got := containerFailures(o)
	want := []struct {
		node, reason, msg string
		exited            bool
	}{
		{"c-both", valkeyv1.ReasonContainerExited, "node c-both: container valkey exited with code 1 (Error)", true},
		{"c-conf", valkeyv1.ReasonContainerExited, "node c-conf: container valkey exited with code 1 (Error): Bad directive or wrong number of arguments", true},
		{"c-exporter", valkeyv1.ReasonContainerExited, "node c-exporter: container exporter exited with code 2 (Error)", false},
		{"c-oom", valkeyv1.ReasonOOMKilled, "node c-oom: container valkey exited with code 137 (OOMKilled)", true},
		{"c-pull", "ImagePullBackOff", `node c-pull: container valkey: ImagePullBackOff: Back-off pulling image "valkey:nope"`, false},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d failures %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.node != w.node || g.reason != w.reason || g.message != w.msg || g.exited != w.exited {
			t.Errorf("failure %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestReplacementBackoff(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	nodes := map[string]*valkeyv1.ValkeyNode{"a": {}, "b": {}}
	exited := func(n string) containerFailure {
		return containerFailure{node: n, reason: valkeyv1.ReasonContainerExited, exited: true}
	}

	rec := countFailures(replacementRecord{}, []containerFailure{exited("a")}, nodes, false, t0)
	if rec.Failures != 1 || rec.delay() != 0 {
		t.Fatalf("after one failure: %+v delay %v, want an immediate replacement", rec, rec.delay())
	}
	// Seen again on the next tick: not counted twice.
	rec = countFailures(rec, []containerFailure{exited("a")}, nodes, false, t0.Add(time.Second))
	if rec.Failures != 1 || !rec.Last.Equal(t0) {
		t.Fatalf("the same failure counted again: %+v", rec)
	}
	// A waiting container is not a lost node.
	rec = countFailures(rec, []containerFailure{{node: "b", reason: "ImagePullBackOff"}}, nodes, false, t0)
	if rec.Failures != 1 {
		t.Fatalf("a waiting container counted: %+v", rec)
	}
	// a is gone (deleted), b fails: the second failure in a row waits.
	delete(nodes, "a")
	t1 := t0.Add(5 * time.Second)
	rec = countFailures(rec, []containerFailure{exited("b")}, nodes, false, t1)
	if rec.Failures != 2 || rec.delay() != replacementBackoffBase || len(rec.Counted) != 1 {
		t.Fatalf("after two failures: %+v delay %v, want %v and only b remembered", rec, rec.delay(), replacementBackoffBase)
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

	wave := topology.Wave{Actions: []topology.Action{
		{Kind: topology.KindCreateNode, CreateNode: &topology.CreateNode{ShardIndex: 0}},
		{Kind: topology.KindDeleteNode, DeleteNode: &topology.NodeRef{Node: "b"}},
	}}
	held, msg := holdCreations(wave, rec, t1.Add(time.Second))
	if len(held.Actions) != 1 || held.Actions[0].Kind != topology.KindDeleteNode || !strings.Contains(msg, "2 node container(s) exited in a row") {
		t.Fatalf("during the backoff: wave %s, message %q; want only the DeleteNode kept", held, msg)
	}
	onlyCreate := topology.Wave{Actions: wave.Actions[:1]}
	held, _ = holdCreations(onlyCreate, rec, t1.Add(time.Second))
	if held.Acts() || actionReason(held.Lead()) != valkeyv1.ReasonReplacementBackoff {
		t.Fatalf("a held wave of creations = %s (reason %s), want a wait with reason %s", held, actionReason(held.Lead()), valkeyv1.ReasonReplacementBackoff)
	}
	for _, tier := range []topology.Tier{topology.TierStability, topology.TierUpdate} {
		roll := topology.Wave{Actions: []topology.Action{{Kind: topology.KindCreateNode, Tier: tier, CreateNode: &topology.CreateNode{ShardIndex: 0}}}}
		if held, _ := holdCreations(roll, rec, t1.Add(time.Second)); held.Lead().Tier != tier {
			t.Errorf("a held %s creation waits in tier %s, want its own", tier, held.Lead().Tier)
		}
	}
	if held, msg := holdCreations(wave, rec, t1.Add(replacementBackoffBase)); len(held.Actions) != 2 || msg != "" {
		t.Fatalf("after the backoff: wave %s, message %q; want the wave unchanged", held, msg)
	}
	if rec := countFailures(rec, nil, nodes, true, t1); rec.Failures != 0 {
		t.Fatalf("a converged cluster keeps the record %+v", rec)
	}
}
