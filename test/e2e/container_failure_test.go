package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// A node whose valkey-server exits at start (a directive value the server
// refuses) is visible on the cluster with the container's reason, and its
// replacements back off instead of being recreated as fast as they die.
// Once the config is fixed the cluster forms by itself and the record of
// the failures is cleared.
func TestFailureCrashingNodesBackOff(t *testing.T) {
	const ns = "fail-crashloop"
	createNamespace(t, ns)
	cfgName := createMenu(t, ns)
	ctx := context.Background()
	var cfg valkeyv1.ValkeyConfig
	if err := k8sClient.Get(ctx, client.ObjectKey{Name: cfgName}, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Spec.Valkey["maxmemory-policy"] = refusedPolicy
	if err := k8sClient.Update(ctx, &cfg); err != nil {
		t.Fatal(err)
	}
	vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"},
		Spec: valkeyv1.ValkeyClusterSpec{ConfigRef: cfgName, Shards: 1, ReplicasPerShard: 0}}
	if err := k8sClient.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	deleteAtEnd(t, vc)
	key := client.ObjectKeyFromObject(vc)

	type record struct {
		Failures int       `json:"failures"`
		Last     time.Time `json:"last"`
	}
	readRecord := func() (record, error) {
		var rec record
		raw := getCluster(t, key).Annotations[valkeyv1.AnnotationReplacementBackoff]
		if raw == "" {
			return rec, fmt.Errorf("no %s annotation yet", valkeyv1.AnnotationReplacementBackoff)
		}
		return rec, json.Unmarshal([]byte(raw), &rec)
	}
	var second record
	eventually(t, 90*time.Second, "a second container failure in a row", func() error {
		rec, err := readRecord()
		if err != nil {
			return err
		}
		if rec.Failures < 2 {
			return fmt.Errorf("%d failure(s) recorded", rec.Failures)
		}
		second = rec
		return nil
	})
	if second.Failures != 2 {
		t.Fatalf("first look at the record shows %d failures, want exactly 2: replacements were not held back", second.Failures)
	}
	// The exited pod is deleted within a tick; the Event keeps its words and
	// the condition then says why no new node comes yet.
	assertWarning(t, key, valkeyv1.ReasonContainerExited, "exited with code 1")
	eventually(t, 30*time.Second, "ContainersHealthy False naming the backoff", func() error {
		c := condition(getCluster(t, key), valkeyv1.CondContainersHealthy)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "exited in a row; the next node is created at") {
			return fmt.Errorf("ContainersHealthy = %+v", c)
		}
		if c.Reason != valkeyv1.ReasonContainerExited && c.Reason != valkeyv1.ReasonReplacementBackoff {
			return fmt.Errorf("ContainersHealthy reason %s, want %s or %s", c.Reason, valkeyv1.ReasonContainerExited, valkeyv1.ReasonReplacementBackoff)
		}
		return nil
	})

	var third record
	eventually(t, 90*time.Second, "a third container failure", func() error {
		rec, err := readRecord()
		if err != nil {
			return err
		}
		if rec.Failures < 3 {
			return fmt.Errorf("%d failure(s) recorded", rec.Failures)
		}
		third = rec
		return nil
	})
	if gap := third.Last.Sub(second.Last); gap < 9*time.Second {
		t.Fatalf("third failure %s after the second: the replacement was not held back", gap)
	}
	t.Logf("second to third failure: %s", third.Last.Sub(second.Last).Round(time.Second))

	if err := k8sClient.Get(ctx, client.ObjectKey{Name: cfgName}, &cfg); err != nil {
		t.Fatal(err)
	}
	delete(cfg.Spec.Valkey, "maxmemory-policy")
	if err := k8sClient.Update(ctx, &cfg); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, key, 1, 0, 3*time.Minute)
	eventually(t, 30*time.Second, "the failure record cleared and ContainersHealthy True", func() error {
		got := getCluster(t, key)
		if raw := got.Annotations[valkeyv1.AnnotationReplacementBackoff]; raw != "" {
			return fmt.Errorf("record still %s", raw)
		}
		if c := condition(got, valkeyv1.CondContainersHealthy); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("ContainersHealthy = %+v", c)
		}
		return nil
	})
}

func condition(vc *valkeyv1.ValkeyCluster, typ string) *metav1.Condition {
	for i := range vc.Status.Conditions {
		if vc.Status.Conditions[i].Type == typ {
			return &vc.Status.Conditions[i]
		}
	}
	return nil
}

// assertWarning waits for a Warning Event on the cluster with reason whose
// note contains note.
func assertWarning(t testing.TB, key client.ObjectKey, reason, note string) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("Warning %s %q", reason, note), func() error {
		var list eventsv1.EventList
		if err := k8sClient.List(context.Background(), &list, client.InNamespace(key.Namespace)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == key.Name && e.Type == corev1.EventTypeWarning && e.Reason == reason && strings.Contains(e.Note, note) {
				return nil
			}
		}
		return fmt.Errorf("none yet")
	})
}
