// Package clusterstatus is how every controller writes a ValkeyCluster's
// status: the conditions helpers, the conflict-retrying status patch, and
// the rule that settles status.observedGeneration.
package clusterstatus
