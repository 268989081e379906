package controller

import (
	"context"
	"fmt"

	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// heldForTLS is the wait a change is turned into while the TLS Secret is
// invalid (condition reason valkeyv1.ReasonHeldForTLS).
const heldForTLS = "topology changes wait for a valid TLS Secret"

// healingOnly is what a cluster whose TLS Secret is invalid may still do:
// promote a replica over a lost primary. A failover needs no new
// certificate, since every node keeps serving the one it has mounted, and
// waiting with it would leave a shard without a primary for as long as the
// Secret stays broken. Anything that adds, moves or replaces members waits,
// as documented: a new pod would be started from material the user is in
// the middle of changing.
func healingOnly(w topology.Wave) topology.Wave {
	var keep []topology.Action
	for _, a := range w.Actions {
		if a.Kind == topology.KindFailover && a.Tier == topology.TierStability {
			keep = append(keep, a)
		}
	}
	switch {
	case len(keep) > 0:
		return topology.Wave{Actions: keep}
	case w.Acts():
		lead := w.Lead()
		return topology.Wave{Actions: []topology.Action{{Kind: topology.KindWait, Tier: lead.Tier,
			Cause: topology.CauseHeldForTLS, Reason: heldForTLS, Detail: fmt.Sprintf("%s (%s)", lead.Kind, lead.Reason)}}}
	default:
		return w
	}
}

// mountedCA is the CA of the operator's copy of the TLS material, the one
// every node has mounted; nil when there is none yet.
func (r *ClusterReconciler) mountedCA(ctx context.Context, rc render.Cluster) ([]byte, error) {
	s, err := r.nodeTLSCopy(ctx, rc)
	if s == nil {
		return nil, err
	}
	return s.Data[tlssecret.KeyCA], nil
}
