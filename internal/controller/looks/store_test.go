package looks

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gomomento/valkey-operator/internal/valkey"
)

func pod(uid types.UID, restarts int32) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "c-0", UID: uid},
		Status:     corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "valkey", RestartCount: restarts}}},
	}
}

func TestFresh(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cluster := types.NamespacedName{Namespace: "ns", Name: "c"}
	look := valkey.Look{Time: now.Add(-20 * time.Second), RunID: "run-1"}
	for _, tc := range []struct {
		name    string
		cluster types.NamespacedName
		pod     *corev1.Pod
		maxAge  time.Duration
		want    bool
	}{
		{name: "younger than maxAge", cluster: cluster, pod: pod("uid-1", 0), maxAge: 45 * time.Second, want: true},
		{name: "as old as maxAge", cluster: cluster, pod: pod("uid-1", 0), maxAge: 20 * time.Second},
		{name: "older than maxAge", cluster: cluster, pod: pod("uid-1", 0), maxAge: 10 * time.Second},
		{name: "a replaced pod", cluster: cluster, pod: pod("uid-2", 0), maxAge: 45 * time.Second},
		{name: "a restarted process", cluster: cluster, pod: pod("uid-1", 1), maxAge: 45 * time.Second},
		{name: "another cluster", cluster: types.NamespacedName{Namespace: "ns", Name: "d"}, pod: pod("uid-1", 0), maxAge: 45 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(nil)
			s.record(cluster, pod("uid-1", 0), look)
			got, ok := s.fresh(tc.cluster, tc.pod, tc.maxAge, now)
			if ok != tc.want || (ok && got.RunID != look.RunID) {
				t.Fatalf("fresh = %+v, %v; want a look: %v", got, ok, tc.want)
			}
		})
	}
}

func TestRecordKeepsTheLaterLook(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cluster := types.NamespacedName{Namespace: "ns", Name: "c"}
	p := pod("uid-1", 0)
	s := New(nil)
	s.record(cluster, p, valkey.Look{Time: now, RunID: "later"})
	s.record(cluster, p, valkey.Look{Time: now.Add(-time.Second), RunID: "earlier"})
	if got, _ := s.fresh(cluster, p, time.Minute, now); got.RunID != "later" {
		t.Fatalf("kept %q, want the later look", got.RunID)
	}
	// After a restart the new process's look replaces the old one, whatever
	// the times say.
	restarted := pod("uid-1", 1)
	s.record(cluster, restarted, valkey.Look{Time: now.Add(-time.Second), RunID: "restarted"})
	if got, ok := s.fresh(cluster, restarted, time.Minute, now); !ok || got.RunID != "restarted" {
		t.Fatalf("after a restart kept %q, %v; want the restarted process's look", got.RunID, ok)
	}
}

func TestKeepAndForgetDrop(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	c1 := types.NamespacedName{Namespace: "ns", Name: "c1"}
	c2 := types.NamespacedName{Namespace: "ns", Name: "c2"}
	a, b := pod("a", 0), pod("b", 0)
	s := New(nil)
	for _, c := range []types.NamespacedName{c1, c2} {
		s.record(c, a, valkey.Look{Time: now})
		s.record(c, b, valkey.Look{Time: now})
	}
	s.Keep(c1, []*corev1.Pod{b})
	if _, ok := s.fresh(c1, a, time.Minute, now); ok {
		t.Error("a deleted pod's look is kept")
	}
	if _, ok := s.fresh(c1, b, time.Minute, now); !ok {
		t.Error("a running pod's look is dropped")
	}
	if _, ok := s.fresh(c2, a, time.Minute, now); !ok {
		t.Error("another cluster's look is dropped")
	}
	s.Forget(c2)
	s.Keep(c1, nil)
	if len(s.clusters) != 0 {
		t.Errorf("looks of deleted clusters and pods are kept: %v", s.clusters)
	}
}

func TestNilStoreKeepsNothing(t *testing.T) {
	var s *Store
	p := pod("a", 0)
	c := types.NamespacedName{Namespace: "ns", Name: "c"}
	s.record(c, p, valkey.Look{Time: time.Now()})
	if _, ok := s.fresh(c, p, time.Minute, time.Now()); ok {
		t.Fatal("a nil store answered with a look")
	}
	s.Keep(c, nil)
	s.Forget(c)
}
