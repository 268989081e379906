package nodeconn

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// Only the kubelet's own report that the Valkey process ended, in a pod
// that never restarts it, counts as Exited: the one proof that lets the
// planner promote over a primary before Valkey's failure detection.
func TestPodStateExited(t *testing.T) {
	terminated := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	pod := func(policy corev1.RestartPolicy, phase corev1.PodPhase, valkey, exporter corev1.ContainerState) *corev1.Pod {
		return &corev1.Pod{
			Spec: corev1.PodSpec{RestartPolicy: policy},
			Status: corev1.PodStatus{Phase: phase, PodIP: "10.0.0.1", ContainerStatuses: []corev1.ContainerStatus{
				{Name: render.ContainerValkey, State: valkey},
				{Name: "exporter", State: exporter},
			}},
		}
	}
	deleting := pod(corev1.RestartPolicyNever, corev1.PodRunning, running, running)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	tests := []struct {
		name   string
		pod    *corev1.Pod
		phase  topology.PodPhase
		exited bool
	}{
		{"running", pod(corev1.RestartPolicyNever, corev1.PodRunning, running, running), topology.PodRunning, false},
		{"valkey ended, exporter keeps the pod running", pod(corev1.RestartPolicyNever, corev1.PodRunning, terminated, running), topology.PodGone, true},
		{"pod failed", pod(corev1.RestartPolicyNever, corev1.PodFailed, terminated, terminated), topology.PodGone, true},
		{"a persistent pod restarts its valkey in place", pod(corev1.RestartPolicyOnFailure, corev1.PodRunning, terminated, running), topology.PodRunning, false},
		{"only the exporter ended", pod(corev1.RestartPolicyNever, corev1.PodRunning, running, terminated), topology.PodRunning, false},
		{"being deleted, still running: may still serve", deleting, topology.PodStopping, false},
		{"absent: no word from the kubelet", nil, topology.PodAbsent, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PodState(tt.pod)
			if got.Phase != tt.phase || got.Exited != tt.exited {
				t.Errorf("PodState = %s exited=%v, want %s exited=%v", got.Phase, got.Exited, tt.phase, tt.exited)
			}
		})
	}
}
