package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// A priorityClassName naming no PriorityClass makes the apiserver refuse
// the pod: the cluster is not Active, and its status says why in the
// apiserver's words (status.message, ContainersHealthy PodRefused).
// Creating the class heals it with no other change.
func TestPlacementMissingPriorityClass(t *testing.T) {
	t.Parallel()
	const ns = "placement-priority"
	createNamespace(t, ns)
	const class = "placement-not-yet"
	cfg := createConfig(t, "placement-priority", "8.0.1", valkeyv1.ValkeyConfigSpec{
		Valkey: map[string]string{"maxmemory": "64mb"},
		Pod:    &valkeyv1.PodSettings{PriorityClassName: class},
	})
	key := createCluster(t, ns, "cache", cfg, 1, 0)
	refusal := "no PriorityClass with name " + class + " was found"
	eventually(t, 2*time.Minute, "the refusal in the cluster's status", func() error {
		vc := getCluster(t, key)
		if vc.Status.State == valkeyv1.StateActive {
			t.Fatalf("cluster Active while its pod is refused: %+v", vc.Status)
		}
		c := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondContainersHealthy)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != valkeyv1.ReasonPodRefused || !strings.Contains(c.Message, refusal) {
			return fmt.Errorf("ContainersHealthy %+v", c)
		}
		if !strings.Contains(vc.Status.Message, refusal) {
			return fmt.Errorf("state %s, status.message %q lacks %q", vc.Status.State, vc.Status.Message, refusal)
		}
		return nil
	})
	if pods := clusterPods(t, key); len(pods) != 0 {
		t.Fatalf("%d pods exist, want none (refused)", len(pods))
	}

	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Value: 1000}
	if err := k8sClient.Create(context.Background(), pc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), pc) })
	vc := waitConverged(t, key, 1, 0, 3*time.Minute)
	if vc.Status.Message != "" {
		t.Errorf("status.message %q after healing, want empty", vc.Status.Message)
	}
	if c := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondContainersHealthy); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("ContainersHealthy %+v after healing", c)
	}
	for name, p := range clusterPods(t, key) {
		if p.Spec.PriorityClassName != class || p.Spec.Priority == nil || *p.Spec.Priority != pc.Value {
			t.Errorf("pod %s: priorityClassName %q, priority %v", name, p.Spec.PriorityClassName, p.Spec.Priority)
		}
	}
	deleteCluster(t, key)
}
