package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/textutil"
	"github.com/gomomento/valkey-operator/internal/topology"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// dataLoss is what losing a primary with no copy of its keys costs.
type dataLoss struct {
	node  string
	shard int
	id    string
	slots []topology.SlotRange
	// unnoticed: nobody was left who knew the primary, so it was deleted
	// without being forgotten (see deadWithKeys).
	unnoticed bool
}

// lostShard says whether a successful action recreates a shard empty, and
// which: the forgotten node's shard from its ValkeyNode, its slots from the
// survivors' views of it (it cannot be asked itself), else from what its
// ValkeyNode recorded when it was last asked.
func lostShard(o *observed, a topology.Action) (dataLoss, bool) {
	if !a.LosesData || a.Kind != topology.KindForget || a.Forget == nil {
		return dataLoss{}, false
	}
	l := dataLoss{node: a.Forget.Node, shard: -1, id: a.Forget.NodeID}
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
	if n := o.nodes[l.node]; len(l.slots) == 0 && n != nil {
		l.slots = recordedSlots(n)
	}
	return l, true
}

// deadWithKeys says whether deleting the ValkeyNode name drops keys nobody
// reported lost: its process is gone, it last served slots as a primary
// (status.slots, cleared once a loss is reported), and no answering primary
// serves any of those slots now. This is the loss of a cluster whose every
// pod went at once: with no survivor to forget the lost primaries on, the
// planner deletes them as dead nodes straight away and a fresh primary
// takes their slots, so the forget that lostShard watches never happens.
// Only the slots nobody serves are lost.
func deadWithKeys(o *observed, name string) (dataLoss, bool) {
	n := o.nodes[name]
	if n == nil || n.Status.Role != valkeyv1.RolePrimary {
		return dataLoss{}, false
	}
	served := map[int]bool{}
	for _, m := range o.members {
		if m.Name == name {
			if m.Pod.Phase == topology.PodRunning || m.Pod.Phase == topology.PodStopping {
				return dataLoss{}, false
			}
			continue
		}
		if m.View == nil || m.View.Role != topology.RolePrimary {
			continue
		}
		for _, r := range m.View.Slots {
			for s := r.Start; s <= r.End; s++ {
				served[s] = true
			}
		}
	}
	var lost []topology.SlotRange
	for _, r := range recordedSlots(n) {
		for s := r.Start; s <= r.End; s++ {
			if !served[s] {
				lost = append(lost, topology.SlotRange{Start: s, End: s})
			}
		}
	}
	if len(lost) == 0 {
		return dataLoss{}, false
	}
	return dataLoss{node: name, shard: int(n.Spec.ShardIndex), id: n.Status.NodeID,
		slots: topology.NormalizeRanges(lost), unnoticed: true}, true
}

// recordedSlots are the slots a ValkeyNode recorded serving when last asked.
func recordedSlots(n *valkeyv1.ValkeyNode) []topology.SlotRange {
	rs, err := valkey.ParseSlotRanges(n.Status.Slots)
	if err != nil {
		return nil
	}
	return rs
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
	lost := "with no replica"
	if l.unnoticed {
		lost = "with no copy of its keys left"
	}
	return fmt.Sprintf("%s lost its primary %s %s at %s: the keys of %s are gone; a fresh, empty primary serves them",
		shard, l.node, lost, at.UTC().Format(time.RFC3339), slots)
}

// lostNode is the ValkeyNode of a lost primary, as the related object of
// the loss's Event: Events that share their regarding and related objects,
// reason and action are folded into one series that keeps only the first
// note, so two shards lost at once need it to tell their slots apart.
func (o *observed) lostNode(l dataLoss) runtime.Object {
	if n := o.nodes[l.node]; n != nil {
		return n
	}
	return nil
}

// recordDataLoss writes the DataLost condition at once, on a fresh copy of
// the cluster, rather than leaving it to the reconcile's closing status
// patch: that patch is dropped on a conflict and the next reconcile, with
// the node already forgotten, would never know the loss happened.
func (r *Reconciler) recordDataLoss(ctx context.Context, vc *valkeyv1.ValkeyCluster, msg string) error {
	err := clusterstatus.Update(ctx, r.Client, r.APIReader, client.ObjectKeyFromObject(vc), func(fresh *valkeyv1.ValkeyCluster) bool {
		clusterstatus.SetCondition(fresh, valkeyv1.CondDataLost, metav1.ConditionTrue, valkeyv1.ReasonPrimaryLostNoReplica, msg)
		return true
	})
	if err != nil {
		return fmt.Errorf("recording the data loss: %w", err)
	}
	return nil
}

// lossReported clears the lost primary's recorded slots once its loss is
// reported, so that deleting its ValkeyNode does not report it again.
func (r *Reconciler) lossReported(ctx context.Context, n *valkeyv1.ValkeyNode) error {
	if n == nil || n.Status.Slots == "" {
		return nil
	}
	// A copy: the wave's other readers keep the observation as it was.
	before := n.DeepCopy()
	cleared := n.DeepCopy()
	cleared.Status.Slots = ""
	if err := r.Status().Patch(ctx, cleared, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("clearing the slots recorded on node %s: %w", n.Name, err)
	}
	return nil
}

// deleteDeadNode deletes a dead node's ValkeyNode and, when that drops
// keys nobody reported lost (deadWithKeys), reports the loss like a
// forgotten primary's: a Warning Event and the DataLost condition. The
// record is read again from the API first, so a cache that has not yet
// seen an earlier report or deletion does not make it twice.
func (r *Reconciler) deleteDeadNode(ctx context.Context, vc *valkeyv1.ValkeyCluster, o *observed, name string) error {
	n := o.nodes[name]
	if n == nil {
		return nil
	}
	loss, lost := deadWithKeys(o, name)
	if lost {
		var live valkeyv1.ValkeyNode
		err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(n), &live)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("reading ValkeyNode %s: %w", name, err)
		}
		check := *o
		check.nodes = map[string]*valkeyv1.ValkeyNode{name: &live}
		lost = live.DeletionTimestamp.IsZero()
		if lost {
			loss, lost = deadWithKeys(&check, name)
		}
	}
	if err := r.Delete(ctx, n); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting ValkeyNode %s: %w", name, err)
	}
	if !lost {
		return nil
	}
	msg := loss.message(time.Now())
	clusterstatus.LogFrom(ctx).Info("deleted a dead primary whose keys nobody holds", "node", name, "shard", loss.shard)
	r.Recorder.Eventf(vc, n, corev1.EventTypeWarning, valkeyv1.ReasonPrimaryLostNoReplica, string(topology.KindDeleteNode), "%s", textutil.Truncate(msg, 1000))
	return r.recordDataLoss(ctx, vc, msg)
}
