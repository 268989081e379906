package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// lostPrimaryReason opens the planner's reason for forgetting a primary that
// had no replica: the one forget whose slots restart empty.
const lostPrimaryReason = "primary lost with no replica"

// dataLoss is what a forget of a replica-less primary costs.
type dataLoss struct {
	node  string
	shard int
	id    string
	slots []topology.SlotRange
}

// lostShard says whether a successful action recreates a shard empty, and
// which: the forgotten node's shard from its ValkeyNode, its slots from the
// survivors' views of it (it cannot be asked itself).
func lostShard(o *observed, a topology.Action) (dataLoss, bool) {
	if a.Kind != topology.KindForget || a.Forget == nil || !strings.HasPrefix(a.Reason, lostPrimaryReason) {
		return dataLoss{}, false
	}
	l := dataLoss{node: a.Detail, shard: -1, id: a.Forget.NodeID}
	for _, m := range o.members {
		if m.NodeID == l.id {
			l.node, l.shard = m.Name, m.ShardIndex
		}
		if m.View == nil || len(l.slots) > 0 {
			continue
		}
		for _, p := range m.View.Peers {
			if p.ID == l.id && len(p.Slots) > 0 {
				l.slots = p.Slots
			}
		}
	}
	return l, true
}

func (l dataLoss) message(at time.Time) string {
	shard := "an unknown shard"
	if l.shard >= 0 {
		shard = fmt.Sprintf("shard %d", l.shard)
	}
	slots := "its slots"
	if len(l.slots) > 0 {
		rs := make([]string, len(l.slots))
		for i, r := range l.slots {
			rs[i] = fmt.Sprintf("%d-%d", r.Start, r.End)
		}
		slots = "slots " + strings.Join(rs, ",")
	}
	return fmt.Sprintf("%s lost its primary %s with no replica at %s: the keys of %s are gone; a fresh, empty primary serves them",
		shard, l.node, at.UTC().Format(time.RFC3339), slots)
}

// recordDataLoss writes the DataLost condition at once, on a fresh copy of
// the cluster, rather than leaving it to the reconcile's closing status
// patch: that patch is dropped on a conflict and the next reconcile, with
// the node already forgotten, would never know the loss happened.
func (r *ClusterReconciler) recordDataLoss(ctx context.Context, vc *valkeyv1.ValkeyCluster, msg string) error {
	err := updateClusterStatus(ctx, r.Client, r.APIReader, client.ObjectKeyFromObject(vc), func(fresh *valkeyv1.ValkeyCluster) bool {
		setCondition(fresh, valkeyv1.CondDataLost, metav1.ConditionTrue, valkeyv1.ReasonPrimaryLostNoReplica, msg)
		return true
	})
	if err != nil {
		return fmt.Errorf("recording the data loss: %w", err)
	}
	return nil
}
