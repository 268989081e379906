package cluster

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// expectationTTL bounds how long a created node may stay out of the cache
// before the operator stops waiting for it: a node deleted by someone else
// before the cache saw it never shows up, and must not hold its cluster
// forever.
const expectationTTL = 2 * time.Minute

// cacheRecheck is how soon a cluster waiting for its created nodes to reach
// the cache looks again; the nodes' own events usually come first.
const cacheRecheck = 200 * time.Millisecond

// nodeExpectations remembers the ValkeyNodes this operator created and its
// cache has not shown yet. The cache lags the apiserver; a reconcile that
// planned on a view lacking a node it created would create that member
// again. Waves run their creations concurrently, so it is locked.
type nodeExpectations struct {
	mu      sync.Mutex
	created map[types.NamespacedName]map[string]time.Time
}

// expect records that node was created for cluster at now.
func (e *nodeExpectations) expect(cluster types.NamespacedName, node string, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.created == nil {
		e.created = map[types.NamespacedName]map[string]time.Time{}
	}
	if e.created[cluster] == nil {
		e.created[cluster] = map[string]time.Time{}
	}
	e.created[cluster][node] = now
}

// unseen drops what the view satisfies (seen reports a node in the cache)
// or what has expired, and returns the created nodes still missing from
// the view, sorted.
func (e *nodeExpectations) unseen(cluster types.NamespacedName, seen func(string) bool, now time.Time) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var missing []string
	for node, at := range e.created[cluster] {
		if seen(node) || now.Sub(at) > expectationTTL {
			delete(e.created[cluster], node)
			continue
		}
		missing = append(missing, node)
	}
	if len(e.created[cluster]) == 0 {
		delete(e.created, cluster)
	}
	slices.Sort(missing)
	return missing
}
