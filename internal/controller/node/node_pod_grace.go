package node

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// podDeleteOptions is how a node's pod is deleted with its ValkeyNode. A
// node the operator retired (Leaving) is stopped at once, without the
// preStop hold: every peer has forgotten it by then, so their replies to
// its pings carry no extensions and it drops every peer's hostname. For
// the ten seconds of the hold a TLS cluster's retired node would answer a
// client's CLUSTER SHARDS with the endpoint "?" for every shard, and a
// client that refreshed its slot map there would have no address for any
// slot. It holds no slot and nothing a peer needs, so there is nothing
// to hand over first. Any other node keeps the hold, in which a primary
// deleted by someone else is failed over first.
func podDeleteOptions(node *valkeyv1.ValkeyNode) []client.DeleteOption {
	if node.Spec.Lifecycle == valkeyv1.LifecycleLeaving {
		return []client.DeleteOption{client.GracePeriodSeconds(0)}
	}
	return nil
}
