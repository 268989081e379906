// Package topology decides the next wave of steps that moves a Valkey cluster
// towards its desired shape.
//
// Plan is a pure function of what the reconciler observed on this tick: the
// cluster's ValkeyNodes, their pods and each reachable node's own view of the
// Valkey topology. Nothing is carried over between calls, so an operator that
// restarts at any point resumes from whatever the next observation shows.
//
// Work is considered in priority order: stability (a healthy primary per
// shard, forgetting departed members, replica counts), then topology
// (departures, drained shards, slot balance, new shards), then rolling
// replacement of outdated nodes, then cleanup. The first applicable step
// wins the tick. Plan holds the order; each tier's steps live in the
// plan_*.go file named for it.
package topology
