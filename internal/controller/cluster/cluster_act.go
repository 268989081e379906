package cluster

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
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/textutil"
	"github.com/gomomento/valkey-operator/internal/topology"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// act performs one planned action. It returns an error only when the action
// failed; the caller reports it and retries on the next tick.
func (r *Reconciler) act(ctx context.Context, s *clusterScope, a topology.Action) error {
	handled, err := r.actOnObjects(ctx, s, a)
	if !handled {
		handled, err = r.actOnNodes(ctx, s, a)
	}
	if err != nil || !handled {
		return err
	}
	vc, o := s.vc, s.o
	if loss, ok := lostShard(o, a); ok {
		r.Recorder.Eventf(vc, o.lostNode(loss), corev1.EventTypeWarning, valkeyv1.ReasonPrimaryLostNoReplica, string(a.Kind), "%s", textutil.Truncate(loss.message(time.Now()), 1000))
		return r.lossReported(ctx, o.nodes[loss.node])
	}
	r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, string(a.Kind), string(a.Kind), "%s", textutil.Truncate(a.Describe(), 1000))
	return nil
}

// actOnObjects carries out the actions that change the cluster's
// ValkeyNodes; handled is false for any other kind.
func (r *Reconciler) actOnObjects(ctx context.Context, s *clusterScope, a topology.Action) (handled bool, err error) {
	vc, o := s.vc, s.o
	switch a.Kind {
	case topology.KindCreateNode:
		return true, r.createNode(ctx, s, a.CreateNode)
	case topology.KindMarkActive:
		if err := r.setLifecycle(ctx, o.nodes[a.MarkActive.Node], valkeyv1.LifecycleActive); err != nil {
			return true, err
		}
		clusterstatus.LogFrom(ctx).Info(a.Reason, "node", a.MarkActive.Node)
		return true, nil
	case topology.KindMarkLeaving:
		return true, r.setLifecycle(ctx, o.nodes[a.MarkLeaving.Node], valkeyv1.LifecycleLeaving)
	case topology.KindDeleteNode:
		if o.nodes[a.DeleteNode.Node] == nil {
			// Already gone: nothing done, nothing to report.
			return false, nil
		}
		return true, r.deleteDeadNode(ctx, vc, o, a.DeleteNode.Node)
	}
	return false, nil
}

func (r *Reconciler) createNode(ctx context.Context, s *clusterScope, c *topology.CreateNode) error {
	name, err := r.newNodeName(ctx, s.vc, s.o)
	if err != nil {
		return err
	}
	spec, err := s.desired(int32(c.ShardIndex))
	if err != nil {
		return fmt.Errorf("rendering node: %w", err)
	}
	node := s.rc.NodeOf(name, spec, string(c.JoinType))
	if err := r.Create(ctx, node); err != nil {
		return fmt.Errorf("creating ValkeyNode %s: %w", name, err)
	}
	r.expected.expect(client.ObjectKeyFromObject(s.vc), name, time.Now())
	clusterstatus.LogFrom(ctx).Info("created node", "node", name, "shard", c.ShardIndex, "joinType", c.JoinType)
	return nil
}

// memberNodes dials the cluster's members at their pods' addresses.
type memberNodes struct {
	o    *observed
	conn *nodeconn.Connector
}

// on runs fn on the named member over a connection of its own.
func (m memberNodes) on(ctx context.Context, name string, fn func(n *valkey.Node) error) error {
	p := m.o.pods[name]
	if p == nil || p.Status.PodIP == "" {
		return fmt.Errorf("node %s has no running pod", name)
	}
	n, err := m.conn.Dial(ctx, name, p.Status.PodIP)
	if err != nil {
		return err
	}
	defer n.Close()
	return fn(n)
}

// actOnNodes carries out the actions that are commands to Valkey nodes;
// handled is false for any other kind.
func (r *Reconciler) actOnNodes(ctx context.Context, s *clusterScope, a topology.Action) (handled bool, err error) {
	m := memberNodes{o: s.o, conn: s.conn}
	switch a.Kind {
	case topology.KindMeet:
		return true, meetSeeds(ctx, m, a.Meet)
	case topology.KindForget:
		return true, forgetEverywhere(ctx, m, a.Forget)
	case topology.KindAddSlots:
		return true, m.on(ctx, a.AddSlots.Node, func(n *valkey.Node) error {
			return n.ClusterAddSlotsRange(ctx, a.AddSlots.Ranges...)
		})
	case topology.KindReplicate:
		return true, m.on(ctx, a.Replicate.Node, func(n *valkey.Node) error { return n.ClusterReplicate(ctx, a.Replicate.PrimaryID) })
	case topology.KindFailover:
		return true, r.failover(ctx, s, m, a.Failover)
	case topology.KindMigrateSlots:
		mv := a.MigrateSlots
		if mv.Method == topology.MigrationClassic {
			return true, r.migrateClassic(ctx, s.o, s.conn, mv)
		}
		return true, m.on(ctx, mv.From, func(n *valkey.Node) error {
			if mv.EmptiesSource {
				// Set on the source alone, before the move: only the node
				// losing its last slot decides whether it follows the
				// target (see topology.MigrateSlots.EmptiesSource).
				if err := n.ConfigSet(ctx, "cluster-allow-replica-migration", "no"); err != nil {
					return err
				}
			}
			return n.ClusterMigrateSlots(ctx, mv.ToID, mv.Slots...)
		})
	case topology.KindClearSlotStates:
		var slots []int
		for _, rg := range a.ClearSlotStates.Slots {
			for slot := rg.Start; slot <= rg.End; slot++ {
				slots = append(slots, slot)
			}
		}
		return true, m.on(ctx, a.ClearSlotStates.Node, func(n *valkey.Node) error {
			return n.ClusterSetSlots(ctx, slots, valkey.SlotStable, "")
		})
	case topology.KindCancelMigrations:
		return true, m.on(ctx, a.CancelMigrations.Node, func(n *valkey.Node) error { return n.ClusterCancelSlotMigrations(ctx) })
	}
	return false, nil
}

func meetSeeds(ctx context.Context, m memberNodes, meet *topology.Meet) error {
	err := m.on(ctx, meet.Node, func(n *valkey.Node) error {
		for _, s := range meet.Seeds {
			if err := n.ClusterMeet(ctx, s.IP, int(render.PortValkey), int(render.PortBus)); err != nil {
				return fmt.Errorf("meeting %s: %w", s.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	clusterstatus.LogFrom(ctx).Info(topology.ReasonMeet, "node", meet.Node, "seeds", len(meet.Seeds))
	return nil
}

// forgetEverywhere: forgets are not gossiped, so every live node must
// forget in this tick.
func forgetEverywhere(ctx context.Context, m memberNodes, f *topology.Forget) error {
	var errs []error
	for _, name := range f.On {
		err := m.on(ctx, name, func(n *valkey.Node) error { return n.ClusterForget(ctx, f.NodeID) })
		if err != nil && !strings.Contains(err.Error(), "Unknown node") {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (r *Reconciler) failover(ctx context.Context, s *clusterScope, m memberNodes, f *topology.Failover) error {
	mode := valkey.FailoverDefault
	switch f.Mode {
	case topology.FailoverTakeover:
		mode = valkey.FailoverTakeover
	case topology.FailoverForce:
		mode = valkey.FailoverForce
	}
	if mode != valkey.FailoverDefault {
		clusterstatus.LogFrom(ctx).Info("promoting a replica over a lost primary", "node", f.Node, "command", "CLUSTER FAILOVER "+string(mode))
	}
	// Recorded before it is sent: a crash in between costs one grace
	// period, never a second failover.
	if err := r.recordFailover(ctx, s.o.nodes[f.Node], time.Now(), f.Mode); err != nil {
		return err
	}
	return m.on(ctx, f.Node, func(n *valkey.Node) error { return n.ClusterFailover(ctx, mode) })
}

// migrateClassic moves one batch of slots with SETSLOT and MIGRATE, on a
// cluster where some node runs Valkey below 9.0.
func (r *Reconciler) migrateClassic(ctx context.Context, o *observed, conn *nodeconn.Connector, m *topology.MigrateSlots) error {
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
		return conn.Dial(ctx, name, ip(name))
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
		user: render.OperatorUser, password: conn.Password,
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

func (r *Reconciler) setLifecycle(ctx context.Context, n *valkeyv1.ValkeyNode, l valkeyv1.NodeLifecycle) error {
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

// recordFailover stamps the failover request's time and mode on the node.
func (r *Reconciler) recordFailover(ctx context.Context, n *valkeyv1.ValkeyNode, at time.Time, mode topology.FailoverMode) error {
	if n == nil {
		return nil
	}
	patch := client.MergeFrom(n.DeepCopy())
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[valkeyv1.AnnotationFailoverRequested] = at.UTC().Format(time.RFC3339Nano)
	n.Annotations[valkeyv1.AnnotationFailoverRequestedMode] = string(mode)
	if err := r.Patch(ctx, n, patch); err != nil {
		return fmt.Errorf("recording the failover request on node %s: %w", n.Name, err)
	}
	return nil
}

// newNodeName draws a fresh {cluster}-{5 hex} name not in use.
func (r *Reconciler) newNodeName(ctx context.Context, vc *valkeyv1.ValkeyCluster, o *observed) (string, error) {
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
