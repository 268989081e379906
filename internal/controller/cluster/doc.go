// Package cluster is the ValkeyCluster controller: it observes a cluster's
// nodes, pods and Valkey's own view, plans with internal/topology, acts one
// wave at a time, and reports the outcome in the cluster's status. Nodes
// are created as ValkeyNode objects, which package node turns into pods.
package cluster
