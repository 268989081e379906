package cluster

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// recordNodeStatus writes each node's Valkey ID, role and pod IP into its
// status, so a node that dies can still be recognised in peers' views.
func (r *Reconciler) recordNodeStatus(ctx context.Context, o *observed) error {
	for _, m := range o.members {
		n := o.nodes[m.Name]
		want := n.Status
		want.PodIP = m.Pod.IP
		if m.View != nil {
			want.NodeID = m.View.ID
			want.Role = valkeyv1.RolePrimary
			want.Slots = topology.FormatRanges(m.View.Slots)
			if m.View.Role == topology.RoleReplica {
				want.Role = valkeyv1.RoleReplica
				want.Slots = ""
			}
		}
		if equality.Semantic.DeepEqual(want, n.Status) {
			continue
		}
		before := n.DeepCopy()
		n.Status = want
		if err := r.Status().Patch(ctx, n, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("recording status of node %s: %w", n.Name, err)
		}
		for i := range o.members {
			if o.members[i].Name == n.Name {
				o.members[i].NodeID = want.NodeID
			}
		}
	}
	return nil
}
