package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/controller/node"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/controller/watch"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/resolve"
	"github.com/gomomento/valkey-operator/internal/topology"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// observe reads the cluster's nodes and pods from the cache, then every
// running node's own view. It notes the nodes the last waves created that
// the cache does not show yet: the planner holds the wave until it does.
func (r *Reconciler) observe(ctx context.Context, s *clusterScope) (phaseResult, error) {
	vc := s.vc
	o, err := r.listMembers(ctx, vc)
	if err != nil {
		return phaseResult{}, err
	}
	s.unseen = r.expected.unseen(client.ObjectKeyFromObject(vc), o.has, time.Now())
	conn, err := r.clusterConnector(ctx, s)
	if err != nil {
		return phaseResult{}, err
	}
	desired, pr, err := r.desiredSpecs(ctx, s, o)
	if pr.done || err != nil {
		return pr, err
	}
	if err := r.buildMembers(ctx, client.ObjectKeyFromObject(vc), o, conn, desired); err != nil {
		return phaseResult{}, err
	}
	if err := r.readStorage(ctx, o); err != nil {
		return phaseResult{}, err
	}
	s.o, s.conn, s.desired = o, conn, desired
	return nextPhase, nil
}

// desiredSpecs is what each shard's nodes should run: the config's fresh
// rendering, or, on a formed cluster whose config cannot be read or
// rendered, the rendering its members run (lastGoodSpecs), so healing
// goes on while the user fixes the config.
func (r *Reconciler) desiredSpecs(ctx context.Context, s *clusterScope, o *observed) (func(int32) (valkeyv1.ValkeyNodeSpec, error), phaseResult, error) {
	if s.res != nil {
		desired := nodeSpecs(s.rc, s.res)
		_, err := desired(0)
		if err == nil {
			return desired, nextPhase, nil
		}
		if !formed(s.vc) {
			return nil, phaseResult{}, err
		}
		msg := err.Error()
		if !clusterstatus.IsConditionMessage(s.vc, valkeyv1.CondReferencesResolved, msg) {
			r.Recorder.Eventf(s.vc, nil, corev1.EventTypeWarning, valkeyv1.ReasonConfigRejected, "Render", "%s", msg)
		}
		s.found.refs = &cond{metav1.ConditionFalse, valkeyv1.ReasonConfigRejected, msg}
		s.aclHeld = true
	}
	desired, ok := lastGoodSpecs(o.nodes)
	if !ok {
		clusterstatus.LogFrom(ctx).Info("no member to keep a rendering from; waiting for the config to be fixed")
		return nil, requeueAfter(r.Options.SteadyResync), nil
	}
	return desired, nextPhase, nil
}

// nodeSpecs renders each shard's node spec once per reconcile. A wave's
// actions run at once, so the memory is guarded.
func nodeSpecs(rc render.Cluster, res *resolve.Result) func(shard int32) (valkeyv1.ValkeyNodeSpec, error) {
	var mu sync.Mutex
	specs := map[int32]valkeyv1.ValkeyNodeSpec{}
	return func(shard int32) (valkeyv1.ValkeyNodeSpec, error) {
		mu.Lock()
		defer mu.Unlock()
		if s, ok := specs[shard]; ok {
			return s, nil
		}
		s, err := rc.NodeSpec(res, shard)
		if err != nil {
			return s, fmt.Errorf("rendering node spec: %w", err)
		}
		specs[shard] = s
		return s, nil
	}
}

// listMembers reads the cluster's ValkeyNodes and pods.
func (r *Reconciler) listMembers(ctx context.Context, vc *valkeyv1.ValkeyCluster) (*observed, error) {
	var nodes valkeyv1.ValkeyNodeList
	if err := r.List(ctx, &nodes, watch.OfCluster(vc.Namespace, vc.Name)...); err != nil {
		return nil, fmt.Errorf("listing ValkeyNodes: %w", err)
	}
	var pods corev1.PodList
	if err := r.List(ctx, &pods, watch.OfCluster(vc.Namespace, vc.Name)...); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	o := &observed{
		nodes:       map[string]*valkeyv1.ValkeyNode{},
		pods:        map[string]*corev1.Pod{},
		versions:    map[string]valkey.Version{},
		unreachable: map[string]error{},

		settings:       map[string]map[string]string{},
		settingsUnread: map[string]error{},
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Spec.ClusterName == vc.Name {
			o.nodes[n.Name] = n
		}
	}
	for i := range pods.Items {
		o.pods[pods.Items[i].Name] = &pods.Items[i]
	}
	if err := r.readMissingPods(ctx, o); err != nil {
		return nil, err
	}
	return o, nil
}

// nodePodState is nodeconn.PodState, except that the pod of a persistent node that
// is not being retired is coming back (the node controller recreates it on
// the same claim): absent or ended, it is pending, never a lost node.
func nodePodState(n *valkeyv1.ValkeyNode, p *corev1.Pod) topology.Pod {
	s := nodeconn.PodState(p)
	if !meta.IsStatusConditionTrue(n.Status.Conditions, valkeyv1.CondPodCreated) || !node.ComesBack(n) {
		return s
	}
	if s.Phase == topology.PodAbsent || s.Phase == topology.PodGone {
		return topology.Pod{Phase: topology.PodPending}
	}
	return s
}

// buildMembers turns ValkeyNodes and pods into planner members, asking every
// running node for its view concurrently. desired gives each shard's current
// node spec, to tell outdated nodes.
func (r *Reconciler) buildMembers(ctx context.Context, key types.NamespacedName, o *observed, conn *nodeconn.Connector,
	desired func(shard int32) (valkeyv1.ValkeyNodeSpec, error)) error {
	names := o.names()
	o.members = make([]topology.Member, len(names))
	running := make([]*corev1.Pod, 0, len(names))
	defer func() { r.Looks.Keep(key, running) }()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, name := range names {
		n := o.nodes[name]
		want, err := desired(n.Spec.ShardIndex)
		if err != nil {
			wg.Wait()
			return err
		}
		outdated, _ := render.Outdated(n.Spec, want)
		// A live edit the node's server refused is rolled out instead.
		outdated = outdated || refusedSettings(n, want.ValkeySettings)
		if liveUnsettled(n, want.ValkeySettings) {
			o.liveUnsettled = append(o.liveUnsettled, name)
		}
		m := topology.Member{
			Name:       name,
			ShardIndex: int(n.Spec.ShardIndex),
			Lifecycle:  topology.Lifecycle(n.Spec.Lifecycle),
			JoinType:   topology.JoinType(n.Labels[valkeyv1.LabelJoinType]),
			Outdated:   outdated,
			NodeID:     n.Status.NodeID,
			Pod:        nodePodState(n, o.pods[name]),
			PodCreated: meta.IsStatusConditionTrue(n.Status.Conditions, valkeyv1.CondPodCreated),
			ComesBack:  meta.IsStatusConditionTrue(n.Status.Conditions, valkeyv1.CondPodCreated) && node.ComesBack(n),

			FailoverRequested:     annotatedTime(n, valkeyv1.AnnotationFailoverRequested),
			FailoverRequestedMode: topology.FailoverMode(n.Annotations[valkeyv1.AnnotationFailoverRequestedMode]),
			LeavingSince:          annotatedTime(n, valkeyv1.AnnotationLeavingSince),
		}
		o.members[i] = m
		if m.Pod.Phase != topology.PodRunning {
			continue
		}
		liveKeys := union(render.LiveKeys(n.Spec.ValkeySettings), render.LiveKeys(want.ValkeySettings))
		pod := o.pods[name]
		running = append(running, pod)
		wg.Add(1)
		go func(i int, name string) {
			defer wg.Done()
			view, version, settings, err := r.observeNode(ctx, conn, key, pod, liveKeys)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				o.unreachable[name] = err
				o.settingsUnread[name] = err
				return
			}
			o.members[i].View = view
			o.versions[name] = version
			if settings.err != nil {
				o.settingsUnread[name] = settings.err
			} else {
				o.settings[name] = settings.values
			}
		}(i, name)
	}
	wg.Wait()
	return nil
}

// runningSettings is what CONFIG GET answered for the live settings.
type runningSettings struct {
	values map[string]string
	err    error
}

// observeNode asks one node about itself and the cluster, and, with the
// same connection, for the live settings named by liveKeys: one CONFIG GET
// per node and pass is what finds drift. A node whose settings cannot be
// read (an ACL file without config|get, from an older operator) is still
// observed. Its INFO answer is kept as the node's look for the other
// controllers, which then need not ask again.
func (r *Reconciler) observeNode(ctx context.Context, conn *nodeconn.Connector, key types.NamespacedName, pod *corev1.Pod,
	liveKeys []string) (*topology.View, valkey.Version, runningSettings, error) {
	name := pod.Name
	n, err := conn.Dial(ctx, name, pod.Status.PodIP)
	if err != nil {
		return nil, valkey.Version{}, runningSettings{}, err
	}
	defer n.Close()
	// Decisions rest on the node's own answer: always a new look.
	look, err := r.Looks.Take(ctx, n, key, pod)
	if err != nil {
		return nil, valkey.Version{}, runningSettings{}, fmt.Errorf("INFO on %s: %w", name, err)
	}
	view, version, err := observeView(ctx, n, name, look)
	if err != nil || len(liveKeys) == 0 {
		return view, version, runningSettings{values: map[string]string{}}, err
	}
	values, err := n.ConfigGet(ctx, liveKeys...)
	if err != nil {
		err = fmt.Errorf("reading the live settings of %s: %w", name, err)
	}
	return view, version, runningSettings{values: values, err: err}, nil
}

// observeView is one node's own view, from its look, and the cluster's as
// it sees it.
func observeView(ctx context.Context, n *valkey.Node, name string, look valkey.Look) (*topology.View, valkey.Version, error) {
	ni, err := look.NodeInfo()
	if err != nil {
		return nil, valkey.Version{}, fmt.Errorf("INFO on %s: %w", name, err)
	}
	server, repl := ni.Server, ni.Replication
	nodes, err := n.ClusterNodes(ctx)
	if err != nil {
		return nil, server.Version, fmt.Errorf("CLUSTER NODES on %s: %w", name, err)
	}
	info, err := n.ClusterInfo(ctx)
	if err != nil {
		return nil, server.Version, fmt.Errorf("CLUSTER INFO on %s: %w", name, err)
	}
	me, ok := nodes.Myself()
	if !ok {
		return nil, server.Version, fmt.Errorf("CLUSTER NODES on %s has no myself line", name)
	}
	v := &topology.View{
		ID:            me.ID,
		Hostname:      me.Hostname,
		Role:          topology.RolePrimary,
		PrimaryID:     me.PrimaryID,
		Slots:         me.Slots,
		ClusterOK:     info.State == "ok",
		SlotsAssigned: info.SlotsAssigned,
		Memory:        topology.Memory{Used: ni.Memory.Used, Dataset: ni.Memory.Dataset, Max: ni.Memory.MaxMemory},
		ReplOffset:    repl.ReplicationOffset,
		Migrating:     me.Migrating,
		Importing:     me.Importing,
	}
	if me.IsReplica() {
		v.Role = topology.RoleReplica
		v.LinkUp = repl.PrimaryLinkStatus == "up"
		v.SyncDone = v.LinkUp && !repl.PrimarySyncInProgress
		v.HoldsData = repl.HoldsPrimaryData()
		if !v.LinkUp {
			v.LinkDownSeconds = repl.LinkDownSeconds
		}
		v.ReplOffset = repl.ReplicaOffset
	}
	v.Peers = peersOf(nodes)
	if server.Version.Major >= 9 {
		if err := observeAtomicMigrations(ctx, n, name, v); err != nil {
			return nil, server.Version, err
		}
	}
	return v, server.Version, nil
}

// peersOf is every node of a CLUSTER NODES answer but the one that gave it.
func peersOf(nodes valkey.ClusterNodes) []topology.Peer {
	var out []topology.Peer
	for _, p := range nodes {
		if p.Myself() {
			continue
		}
		peer := topology.Peer{
			ID:        p.ID,
			IP:        p.IP,
			Hostname:  p.Hostname,
			Role:      topology.RolePrimary,
			PrimaryID: p.PrimaryID,
			Slots:     p.Slots,
			Fail:      p.HasFlag(valkey.FlagFail),
			PFail:     p.HasFlag(valkey.FlagPFail),
			Handshake: p.HasFlag(valkey.FlagHandshake),
		}
		if p.IsReplica() {
			peer.Role = topology.RoleReplica
		}
		out = append(out, peer)
	}
	return out
}

// observeAtomicMigrations adds a Valkey 9 node's slot migrations to its view.
func observeAtomicMigrations(ctx context.Context, n *valkey.Node, name string, v *topology.View) error {
	migrations, err := n.ClusterGetSlotMigrations(ctx)
	switch {
	case valkey.IsNoPermission(err):
		// A node below 9 in the cluster (an upgrade under way): the
		// ACL file cannot grant this subcommand, which Valkey 8 does
		// not know, and the operator moves slots classically, so it
		// has started no atomic migration to follow.
	case err != nil:
		return fmt.Errorf("CLUSTER GETSLOTMIGRATIONS on %s: %w", name, err)
	}
	v.AtomicMigrationInFlight = slices.ContainsFunc(migrations, func(m valkey.SlotMigration) bool { return !m.Finished() })
	for _, m := range migrations {
		if !m.Finished() && m.Operation == valkey.SlotMigrationExport {
			v.Exports = append(v.Exports, topology.Export{TargetID: m.TargetNode, Slots: m.SlotRanges})
		}
	}
	v.AtomicMigrationFailure = migrationFailure(name, migrations)
	return nil
}

// annotatedTime reads a time the operator recorded on the node; an
// unreadable value counts as none, so a hand-edited annotation cannot stall
// a roll or a departure.
func annotatedTime(n *valkeyv1.ValkeyNode, annotation string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, n.Annotations[annotation])
	if err != nil {
		return time.Time{}
	}
	return t
}

// migrationFailure describes the node's latest finished slot migration job
// when it did not succeed; "" when it did or there is none. Valkey keeps a
// bounded history, so an old failure followed by a success reads as none.
func migrationFailure(node string, ms []valkey.SlotMigration) string {
	var latest *valkey.SlotMigration
	for i, m := range ms {
		if m.Finished() && (latest == nil || m.Created.After(latest.Created)) {
			latest = &ms[i]
		}
	}
	if latest == nil || latest.State == valkey.SlotMigrationSuccess {
		return ""
	}
	return fmt.Sprintf("%s %s of slots %v %s: %s", node, strings.ToLower(latest.Operation), latest.SlotRanges, latest.State, latest.Message)
}
