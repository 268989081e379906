package looks

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gomomento/valkey-operator/internal/valkey"
)

// Store holds the latest look at each running node, by cluster and pod.
// A look is kept under the pod's UID and its containers' restart count, so
// neither a replaced pod nor a restarted process is answered with the look
// of the one before. A nil Store keeps nothing: every read asks the node.
type Store struct {
	mu       sync.Mutex
	clusters map[types.NamespacedName]map[types.UID]entry
}

// entry is one pod's latest look and the restart count it was taken at.
type entry struct {
	restarts int32
	look     valkey.Look
}

// New returns an empty store.
func New() *Store { return &Store{clusters: map[types.NamespacedName]map[types.UID]entry{}} }

// restarts is the pod's containers' restarts: a process that started again
// gave no look yet.
func restarts(pod *corev1.Pod) int32 {
	var n int32
	for _, c := range pod.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return n
}

// Take asks the node for a look and records it. Decisions that rest on the
// node's own answer take one; those that can use one a moment old ask
// Recent.
func (s *Store) Take(ctx context.Context, n *valkey.Node, cluster types.NamespacedName, pod *corev1.Pod) (valkey.Look, error) {
	l, err := n.Look(ctx)
	if err != nil {
		return valkey.Look{}, err
	}
	s.record(cluster, pod, l)
	return l, nil
}

// Recent is the pod's kept look if it is younger than maxAge and taken
// after since (a caller that used a look asks for a later one), or else a
// new one taken from the node dial opens.
func (s *Store) Recent(ctx context.Context, cluster types.NamespacedName, pod *corev1.Pod, maxAge time.Duration, since time.Time,
	dial func(context.Context) (*valkey.Node, error)) (valkey.Look, error) {
	if l, ok := s.fresh(cluster, pod, maxAge, time.Now()); ok && l.Time.After(since) {
		return l, nil
	}
	n, err := dial(ctx)
	if err != nil {
		return valkey.Look{}, err
	}
	defer n.Close()
	l, err := s.Take(ctx, n, cluster, pod)
	if err != nil {
		return valkey.Look{}, fmt.Errorf("INFO on %s: %w", pod.Name, err)
	}
	return l, nil
}

// record keeps l as the pod's look unless a later one is kept already (two
// controllers asking at once).
func (s *Store) record(cluster types.NamespacedName, pod *corev1.Pod, l valkey.Look) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clusters == nil {
		s.clusters = map[types.NamespacedName]map[types.UID]entry{}
	}
	pods := s.clusters[cluster]
	if pods == nil {
		pods = map[types.UID]entry{}
		s.clusters[cluster] = pods
	}
	r := restarts(pod)
	if old, ok := pods[pod.UID]; ok && old.restarts == r && old.look.Time.After(l.Time) {
		return
	}
	pods[pod.UID] = entry{restarts: r, look: l}
}

// fresh is the pod's kept look when it is of the same process and younger
// than maxAge at now.
func (s *Store) fresh(cluster types.NamespacedName, pod *corev1.Pod, maxAge time.Duration, now time.Time) (valkey.Look, bool) {
	if s == nil {
		return valkey.Look{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.clusters[cluster][pod.UID]
	if !ok || e.restarts != restarts(pod) {
		return valkey.Look{}, false
	}
	if age := now.Sub(e.look.Time); age < 0 || age >= maxAge {
		return valkey.Look{}, false
	}
	return e.look, true
}

// Keep drops the cluster's looks at pods not among pods (deleted or
// replaced).
func (s *Store) Keep(cluster types.NamespacedName, pods []*corev1.Pod) {
	if s == nil {
		return
	}
	live := map[types.UID]bool{}
	for _, p := range pods {
		live[p.UID] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for uid := range s.clusters[cluster] {
		if !live[uid] {
			delete(s.clusters[cluster], uid)
		}
	}
	if len(s.clusters[cluster]) == 0 {
		delete(s.clusters, cluster)
	}
}

// Forget drops every look at a deleted cluster's nodes.
func (s *Store) Forget(cluster types.NamespacedName) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.clusters, cluster)
}
