// Package autoscaler samples every node's utilisation and decides, from a
// window of samples, when a cluster with autoscaling enabled should change
// its shard count; it writes the decision to the cluster's status for the
// cluster controller to carry out.
package autoscaler
