// Package autoscale holds the autoscaler's arithmetic and decisions as pure
// functions: a utilisation sample from two readings of a node's counters,
// the bounded sample history, the scale-out/scale-in decision and the
// memory-headroom check that guards a scale-in. Nothing here talks to
// Kubernetes or Valkey, so every rule has a table test.
package autoscale
