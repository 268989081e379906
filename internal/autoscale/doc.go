// Package autoscale holds the autoscaler's arithmetic and decisions as pure
// functions: a utilisation sample from two readings of a node's counters,
// the bounded sample history, the scale-out/scale-in decision, the
// memory-headroom check that guards a scale-in, and the shard count a
// cluster converges to while autoscaling is set. Nothing here talks to
// Kubernetes or Valkey, so every rule has a table test.
package autoscale
