// Package looks keeps each node's latest INFO answer, so one INFO per node
// and interval serves every controller that reads it, and makes the
// autoscaler's samples the cluster controller's probe: a sample that finds
// a node's vitals changed, or the node not answering, wakes its cluster.
package looks
