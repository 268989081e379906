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
//
// The looks the autoscaler's samples take (Recent) are the cluster
// controller's probe between its safety passes: one whose vitals differ
// from the kept look's, or that fails at a node with a kept look, wakes
// the cluster.
type Store struct {
	mu       sync.Mutex
	clusters map[types.NamespacedName]map[types.UID]entry
	wake     func(types.NamespacedName)
}

// entry is one pod's latest look and the restart count it was taken at.
type entry struct {
	restarts int32
	look     valkey.Look
	// vitals are the look's, once read (a sample's look is read when
	// taken; the cluster controller's when a sample is compared with it).
	vitals *vitals
}

// New returns an empty store that calls wake (when not nil) with the key
// of a cluster a sample found changed. wake must not block.
func New(wake func(types.NamespacedName)) *Store {
	return &Store{clusters: map[types.NamespacedName]map[types.UID]entry{}, wake: wake}
}

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
	l, err := probe(ctx, pod, dial)
	if s.sampled(cluster, pod, l, err) && s.wake != nil {
		s.wake(cluster)
	}
	return l, err
}

// probe takes a new look at the node dial opens.
func probe(ctx context.Context, pod *corev1.Pod, dial func(context.Context) (*valkey.Node, error)) (valkey.Look, error) {
	n, err := dial(ctx)
	if err != nil {
		return valkey.Look{}, err
	}
	defer n.Close()
	l, err := n.Look(ctx)
	if err != nil {
		return valkey.Look{}, fmt.Errorf("INFO on %s: %w", pod.Name, err)
	}
	return l, nil
}

// sampled keeps a sample's look (when err is nil) and says whether the
// cluster is to be woken: the pod has a kept look and the sample failed or
// its vitals differ from the kept look's.
func (s *Store) sampled(cluster types.NamespacedName, pod *corev1.Pod, l valkey.Look, err error) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, kept := s.clusters[cluster][pod.UID]
	if err != nil {
		return kept
	}
	cur := vitalsOf(l)
	changed := kept && keptVitals(old) != cur
	s.keep(cluster, pod, entry{restarts: restarts(pod), look: l, vitals: &cur})
	return changed
}

// keptVitals are the entry's look's vitals.
func keptVitals(e entry) vitals {
	if e.vitals != nil {
		return *e.vitals
	}
	return vitalsOf(e.look)
}

// record keeps l as the pod's look unless a later one is kept already (two
// controllers asking at once).
func (s *Store) record(cluster types.NamespacedName, pod *corev1.Pod, l valkey.Look) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keep(cluster, pod, entry{restarts: restarts(pod), look: l})
}

// keep is record with s.mu held.
func (s *Store) keep(cluster types.NamespacedName, pod *corev1.Pod, e entry) {
	if s.clusters == nil {
		s.clusters = map[types.NamespacedName]map[types.UID]entry{}
	}
	pods := s.clusters[cluster]
	if pods == nil {
		pods = map[types.UID]entry{}
		s.clusters[cluster] = pods
	}
	if old, ok := pods[pod.UID]; ok && old.restarts == e.restarts && old.look.Time.After(e.look.Time) {
		return
	}
	pods[pod.UID] = e
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
