package controller

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/topology"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// act performs one planned action. It returns an error only when the action
// failed; the caller reports it and retries on the next tick.
func (r *ClusterReconciler) act(ctx context.Context, s *clusterScope, a topology.Action) error {
	vc, rc, o, conn := s.vc, s.rc, s.o, s.conn
	log := logFrom(ctx)
	member := func(name string) (string, error) {
		p := o.pods[name]
		if p == nil || p.Status.PodIP == "" {
			return "", fmt.Errorf("node %s has no running pod", name)
		}
		return p.Status.PodIP, nil
	}
	onNode := func(name string, fn func(n *valkey.Node) error) error {
		ip, err := member(name)
		if err != nil {
			return err
		}
		n, err := conn.dial(ctx, name, ip)
		if err != nil {
			return err
		}
		defer n.Close()
		return fn(n)
	}

	switch a.Kind {
	case topology.KindCreateNode:
		name, err := r.newNodeName(ctx, vc, o)
		if err != nil {
			return err
		}
		spec, err := s.desired(int32(a.CreateNode.ShardIndex))
		if err != nil {
			return fmt.Errorf("rendering node: %w", err)
		}
		node := rc.NodeOf(name, spec, string(a.CreateNode.JoinType))
		if err := r.Create(ctx, node); err != nil {
			return fmt.Errorf("creating ValkeyNode %s: %w", name, err)
		}
		r.expected.expect(client.ObjectKeyFromObject(vc), name, time.Now())
		log.Info("created node", "node", name, "shard", a.CreateNode.ShardIndex, "joinType", a.CreateNode.JoinType)
	case topology.KindMeet:
		err := onNode(a.Meet.Node, func(n *valkey.Node) error {
			for _, s := range a.Meet.Seeds {
				if err := n.ClusterMeet(ctx, s.IP, int(render.PortValkey), int(render.PortBus)); err != nil {
					return fmt.Errorf("meeting %s: %w", s.Name, err)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		log.Info(topology.ReasonMeet, "node", a.Meet.Node, "seeds", len(a.Meet.Seeds))
	case topology.KindForget:
		// Forgets are not gossiped: every live node must forget in this tick.
		var errs []error
		for _, name := range a.Forget.On {
			err := onNode(name, func(n *valkey.Node) error { return n.ClusterForget(ctx, a.Forget.NodeID) })
			if err != nil && !strings.Contains(err.Error(), "Unknown node") {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	case topology.KindAddSlots:
		if err := onNode(a.AddSlots.Node, func(n *valkey.Node) error {
			return n.ClusterAddSlotsRange(ctx, a.AddSlots.Ranges...)
		}); err != nil {
			return err
		}
	case topology.KindReplicate:
		if err := onNode(a.Replicate.Node, func(n *valkey.Node) error { return n.ClusterReplicate(ctx, a.Replicate.PrimaryID) }); err != nil {
			return err
		}
	case topology.KindMarkActive:
		if err := r.setLifecycle(ctx, o.nodes[a.MarkActive.Node], valkeyv1.LifecycleActive); err != nil {
			return err
		}
		log.Info(a.Reason, "node", a.MarkActive.Node)
	case topology.KindMarkLeaving:
		if err := r.setLifecycle(ctx, o.nodes[a.MarkLeaving.Node], valkeyv1.LifecycleLeaving); err != nil {
			return err
		}
	case topology.KindDeleteNode:
		if o.nodes[a.DeleteNode.Node] == nil {
			return nil
		}
		if err := r.deleteDeadNode(ctx, vc, o, a.DeleteNode.Node); err != nil {
			return err
		}
	case topology.KindFailover:
		mode := valkey.FailoverDefault
		if a.Failover.Mode == topology.FailoverTakeover {
			mode = valkey.FailoverTakeover
			log.Info(topology.ReasonTakeover, "node", a.Failover.Node)
		}
		// Recorded before it is sent: a crash in between costs one grace
		// period, never a second failover.
		if err := r.recordFailover(ctx, o.nodes[a.Failover.Node], time.Now()); err != nil {
			return err
		}
		if err := onNode(a.Failover.Node, func(n *valkey.Node) error { return n.ClusterFailover(ctx, mode) }); err != nil {
			return err
		}
	case topology.KindMigrateSlots:
		m := a.MigrateSlots
		if m.Method == topology.MigrationClassic {
			if err := r.migrateClassic(ctx, o, conn, m); err != nil {
				return err
			}
			break
		}
		if err := onNode(m.From, func(n *valkey.Node) error {
			return n.ClusterMigrateSlots(ctx, m.ToID, m.Slots...)
		}); err != nil {
			return err
		}
	case topology.KindClearSlotStates:
		var slots []int
		for _, r := range a.ClearSlotStates.Slots {
			for slot := r.Start; slot <= r.End; slot++ {
				slots = append(slots, slot)
			}
		}
		if err := onNode(a.ClearSlotStates.Node, func(n *valkey.Node) error {
			return n.ClusterSetSlots(ctx, slots, valkey.SlotStable, "")
		}); err != nil {
			return err
		}
	case topology.KindCancelMigrations:
		if err := onNode(a.CancelMigrations.Node, func(n *valkey.Node) error { return n.ClusterCancelSlotMigrations(ctx) }); err != nil {
			return err
		}
	default:
		return nil
	}
	if loss, ok := lostShard(o, a); ok {
		r.Recorder.Eventf(vc, o.lostNode(loss), corev1.EventTypeWarning, valkeyv1.ReasonPrimaryLostNoReplica, string(a.Kind), "%s", truncate(loss.message(time.Now()), 1000))
		return r.lossReported(ctx, o.nodes[loss.node])
	}
	r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, string(a.Kind), string(a.Kind), "%s", truncate(describe(a), 1000))
	return nil
}

// migrateClassic moves one batch of slots with SETSLOT and MIGRATE, on a
// cluster where some node runs Valkey below 9.0.
func (r *ClusterReconciler) migrateClassic(ctx context.Context, o *observed, conn *connector, m *topology.MigrateSlots) error {
	ip := func(name string) string {
		if p := o.pods[name]; p != nil {
			return p.Status.PodIP
		}
		return ""
	}
	dial := func(name string) (*valkey.Node, error) {
		if ip(name) == "" {
			return nil, fmt.Errorf("node %s has no running pod", name)
		}
		return conn.dial(ctx, name, ip(name))
	}
	from, err := dial(m.From)
	if err != nil {
		return err
	}
	defer from.Close()
	to, err := dial(m.To)
	if err != nil {
		return err
	}
	defer to.Close()
	cm := classicMigration{
		from: from, to: to, fromID: m.FromID, toID: m.ToID,
		toHost: ip(m.To), toPort: int(render.PortValkey),
		user: render.OperatorUser, password: conn.password,
	}
	for _, mem := range o.members {
		if mem.Name == m.From || mem.Name == m.To || mem.View == nil || mem.View.Role != topology.RolePrimary || len(mem.View.Slots) == 0 {
			continue
		}
		if n, err := dial(mem.Name); err == nil {
			defer n.Close()
			cm.others = append(cm.others, n)
		}
	}
	for _, r := range m.Slots {
		if err := cm.run(ctx, valkey.SlotRange{Start: r.Start, End: r.End}); err != nil {
			return err
		}
	}
	return nil
}

func (r *ClusterReconciler) setLifecycle(ctx context.Context, n *valkeyv1.ValkeyNode, l valkeyv1.NodeLifecycle) error {
	if n == nil {
		return nil
	}
	patch := client.MergeFrom(n.DeepCopy())
	n.Spec.Lifecycle = l
	if l != valkeyv1.LifecycleLeaving {
		// A node kept after all (promoted while it was being retired)
		// starts any later departure's grace afresh.
		delete(n.Annotations, valkeyv1.AnnotationLeavingSince)
	}
	if l == valkeyv1.LifecycleLeaving && n.Annotations[valkeyv1.AnnotationLeavingSince] == "" {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[valkeyv1.AnnotationLeavingSince] = time.Now().UTC().Format(time.RFC3339Nano)
	}
	// The shard join type only marks the join in progress.
	if l == valkeyv1.LifecycleActive && n.Labels[valkeyv1.LabelJoinType] == valkeyv1.JoinTypeShard {
		delete(n.Labels, valkeyv1.LabelJoinType)
	}
	if err := r.Patch(ctx, n, patch); err != nil {
		return fmt.Errorf("setting lifecycle of node %s to %s: %w", n.Name, l, err)
	}
	return nil
}

// recordFailover stamps the failover request time on the node.
func (r *ClusterReconciler) recordFailover(ctx context.Context, n *valkeyv1.ValkeyNode, at time.Time) error {
	if n == nil {
		return nil
	}
	patch := client.MergeFrom(n.DeepCopy())
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[valkeyv1.AnnotationFailoverRequested] = at.UTC().Format(time.RFC3339Nano)
	if err := r.Patch(ctx, n, patch); err != nil {
		return fmt.Errorf("recording the failover request on node %s: %w", n.Name, err)
	}
	return nil
}

// newNodeName draws a fresh {cluster}-{5 hex} name not in use.
func (r *ClusterReconciler) newNodeName(ctx context.Context, vc *valkeyv1.ValkeyCluster, o *observed) (string, error) {
	for range 16 {
		name, err := render.NewNodeName(vc.Name, rand.Reader)
		if err != nil {
			return "", err
		}
		if _, taken := o.nodes[name]; taken {
			continue
		}
		var existing valkeyv1.ValkeyNode
		if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: name}, &existing); apierrors.IsNotFound(err) {
			return name, nil
		}
	}
	return "", fmt.Errorf("could not find a free node name for cluster %s", vc.Name)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
