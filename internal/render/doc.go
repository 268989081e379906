// Package render builds every Kubernetes object the operator owns for a
// ValkeyCluster (Service, Secrets, per-node ConfigMap and Pod, per-shard
// PodDisruptionBudget, ValkeyNode) and the two files Valkey reads (valkey.conf
// and the ACL file).
//
// Everything here is a pure function of its inputs: randomness comes in as
// an io.Reader and the cluster's environment as a Cluster value, so the same
// desired objects are produced on every reconcile and the reconciler only
// compares and applies.
//
// Where this operator deliberately differs from the documented one, the
// owning file says so and why: no password ever sits in a ConfigMap, pods
// meet Pod Security "restricted", the liveness probe is a TCP check in both
// modes, one PodDisruptionBudget guards each shard, and the TLS material
// pods mount is an operator-owned copy of the user's Secret.
package render
