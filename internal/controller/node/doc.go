// Package node is the ValkeyNode controller: it turns one node object
// into its pod, config and claim, brings a persistent node back on its
// claim, and expands the claim to the size the cluster recorded.
package node
