package cluster

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
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
	// A node whose pod the apiserver refused has no pod; one whose pod is
	// merely not created yet is no failure.
	o.nodes["c-refused"] = &valkeyv1.ValkeyNode{Status: valkeyv1.ValkeyNodeStatus{Conditions: []metav1.Condition{{
		Type: valkeyv1.CondPodCreated, Status: metav1.ConditionFalse, Reason: valkeyv1.ReasonPodRefused,
		Message: `pods "c-refused" is forbidden: no PriorityClass with name nope was found`}}}}
	o.nodes["c-new"] = &valkeyv1.ValkeyNode{}
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
		{"c-refused", valkeyv1.ReasonPodRefused, `node c-refused: pod refused by the apiserver: pods "c-refused" is forbidden: no PriorityClass with name nope was found`, false},
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
