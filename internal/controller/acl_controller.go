package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// ACLReloader makes every node of a cluster run the ACL file the cluster
// controller rendered into Secret {cluster}-acl: it issues ACL LOAD (the
// node reads its mounted file) and then compares the node's ACL LIST with
// the rendered file, because the mounted file trails the Secret. It runs on
// a change of that Secret and on a tick, which also reverts ACL SETUSER
// edits made by hand.
type ACLReloader struct {
	client.Client
	// APIReader reads the cluster around the cache for status writes.
	APIReader client.Reader
	Options   Options
	Recorder  events.EventRecorder
	// Dialer opens connections to nodes; nil dials directly.
	Dialer DialFunc

	mu       sync.Mutex
	clusters map[types.NamespacedName]*aclMemory
}

// aclMemory paces one cluster; losing it costs at most an extra ACL LOAD
// per node.
type aclMemory struct {
	// want is the rendered file's hash last seen; since is when the nodes
	// last all ran it, or when it changed.
	want  string
	since time.Time
	// lastFull is when every node was last sent ACL LOAD; in between, a
	// retry only visits the nodes not yet confirmed.
	lastFull time.Time
	// confirmed maps a pod to the file hash its ACL LIST last matched.
	confirmed map[types.UID]string
}

// SetupACLReload registers the ACL reload controller.
func SetupACLReload(mgr ctrl.Manager, opts Options, dialer DialFunc) error {
	r := &ACLReloader{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Options:   opts,
		Recorder:  mgr.GetEventRecorder("valkey-operator"),
		Dialer:    dialer,
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("aclreload").
		For(&valkeyv1.ValkeyCluster{}, builder.WithPredicates(clusterChangedFor(valkeyv1.CondACLApplied, nil))).
		Watches(&corev1.Secret{}, toCluster(render.ACLSecretName)).
		// A node that starts answering is checked at once, not on the tick.
		Watches(&corev1.Pod{}, toCluster(anyName), builder.WithPredicates(managedPods(), podAddressChanged())).
		// A node that does not answer holds up its own cluster's pass, not
		// every other cluster's.
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r); err != nil {
		return fmt.Errorf("setting up ACL reload controller: %w", err)
	}
	return nil
}

// podAddressChanged passes pods that appear, go, or change phase or
// address; probe and status noise in between is ignored.
func podAddressChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*corev1.Pod)
			n, ok2 := e.ObjectNew.(*corev1.Pod)
			if !ok1 || !ok2 {
				return true
			}
			return o.Status.Phase != n.Status.Phase || o.Status.PodIP != n.Status.PodIP || !o.DeletionTimestamp.Equal(n.DeletionTimestamp)
		},
	}
}

func (r *ACLReloader) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var vc valkeyv1.ValkeyCluster
	if err := r.Get(ctx, req.NamespacedName, &vc); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading cluster: %w", err)
	}
	if !vc.DeletionTimestamp.IsZero() {
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	tick := r.tick()
	// An Invalid cluster is left alone; the state change back is watched.
	if vc.Status.State == valkeyv1.StateInvalid {
		return ctrl.Result{RequeueAfter: tick}, nil
	}
	log := logf.FromContext(ctx).WithValues("cluster", vc.Name, "namespace", vc.Namespace)
	ctx = logf.IntoContext(ctx, log)

	secretName := render.ACLSecretName(vc.Name)
	var aclSecret corev1.Secret
	switch err := r.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: secretName}, &aclSecret); {
	case apierrors.IsNotFound(err):
		// Not rendered yet; its creation is watched.
		return ctrl.Result{RequeueAfter: tick}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("reading Secret %s: %w", secretName, err)
	}
	file := string(aclSecret.Data[render.KeyACL])
	want, err := parseACLLines(strings.Split(file, "\n"))
	if err != nil {
		// The cluster controller renders it; a file this cannot read is a
		// defect to report, not a reason to stop reloading.
		return ctrl.Result{}, fmt.Errorf("reading the ACL file in Secret %s: %w", secretName, err)
	}
	conn, err := nodeConnector(ctx, r, &vc, r.Options.ClusterDomain, r.Dialer)
	if err != nil {
		return ctrl.Result{}, err
	}
	pods, err := runningPods(ctx, r, &vc)
	if err != nil {
		return ctrl.Result{}, err
	}

	sum := sha256.Sum256([]byte(file))
	hash := hex.EncodeToString(sum[:])
	mem, full := r.memory(req.NamespacedName, hash, tick)
	if full {
		log.Info("ACL reconcile tick")
	}
	nodes := r.pass(ctx, &vc, conn, pods, file, want, hash, mem, full)

	prior := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondACLApplied)
	r.mu.Lock()
	age := time.Since(mem.since)
	r.mu.Unlock()
	rep := summarizeACL(aclInput{Secret: secretName, Nodes: nodes, Age: age, Tick: tick})
	r.settle(req.NamespacedName, rep)
	if (prior == nil || prior.Message != rep.Message) && len(rep.Rejected) > 0 {
		byName := map[string]*corev1.Pod{}
		for _, p := range pods {
			byName[p.Name] = p
		}
		for _, n := range rep.Rejected {
			// The pod as related object keeps one node's Event from being
			// folded into another's series.
			r.Recorder.Eventf(&vc, byName[n.Name], corev1.EventTypeWarning, valkeyv1.ReasonACLRejected, "LoadACL",
				"node %s rejected the ACL file in Secret %q and keeps its previous ACL rules: %s", n.Name, secretName, truncate(n.Rejected.Error(), 800))
		}
	}
	if (prior == nil || prior.Message != rep.Message) && rep.Reason == valkeyv1.ReasonACLLoadUnsafe {
		r.Recorder.Eventf(&vc, nil, corev1.EventTypeWarning, valkeyv1.ReasonACLLoadUnsafe, "LoadACL", "%s", rep.Message)
	}
	if err := r.writeStatus(ctx, req.NamespacedName, rep); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: rep.Requeue}, nil
}

func (r *ACLReloader) tick() time.Duration {
	if r.Options.ACLReloadInterval > 0 {
		return r.Options.ACLReloadInterval
	}
	return DefaultOptions().ACLReloadInterval
}

// memory returns the cluster's pacing state and whether this pass visits
// every node: when the rendered file changed or a tick has passed.
func (r *ACLReloader) memory(key types.NamespacedName, hash string, tick time.Duration) (*aclMemory, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.clusters == nil {
		r.clusters = map[types.NamespacedName]*aclMemory{}
	}
	m := r.clusters[key]
	if m == nil {
		m = &aclMemory{confirmed: map[types.UID]string{}}
		r.clusters[key] = m
	}
	now := time.Now()
	full := m.want != hash || now.Sub(m.lastFull) >= tick
	if m.want != hash {
		m.want, m.since = hash, now
	}
	if full {
		m.lastFull = now
	}
	return m, full
}

// settle restarts the unsettled clock once every node runs the file, so
// the next change gets the full window of quick retries.
func (r *ACLReloader) settle(key types.NamespacedName, rep aclReport) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.clusters[key]; m != nil && rep.Status == metav1.ConditionTrue {
		m.since = time.Now()
	}
}

func (r *ACLReloader) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.clusters, key)
	r.mu.Unlock()
	aclLoads.DeletePartialMatch(prometheus.Labels{"namespace": key.Namespace, "cluster": key.Name})
}

// pass visits the nodes concurrently, so one that does not answer neither
// delays nor blocks the others. Outside a full pass, a node already
// confirmed on this file is reported as it was.
func (r *ACLReloader) pass(ctx context.Context, vc *valkeyv1.ValkeyCluster, conn *connector, pods []*corev1.Pod,
	file string, want map[string]aclUser, hash string, mem *aclMemory, full bool) []aclNode {
	r.mu.Lock()
	skip := make([]bool, len(pods))
	for i, p := range pods {
		skip[i] = !full && mem.confirmed[p.UID] == hash
	}
	r.mu.Unlock()

	out := make([]aclNode, len(pods))
	var wg sync.WaitGroup
	for i, pod := range pods {
		out[i] = aclNode{Name: pod.Name}
		if skip[i] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = r.visit(ctx, vc, conn, pod, file, want)
		}()
	}
	wg.Wait()

	r.mu.Lock()
	defer r.mu.Unlock()
	// Only pods that still exist are remembered.
	confirmed := map[types.UID]string{}
	for i, pod := range pods {
		if out[i].current() {
			confirmed[pod.UID] = hash
		}
	}
	mem.confirmed = confirmed
	return out
}

// visit brings one node to the rendered rules and counts the attempt.
// The count is read off the outcome, so no way a node goes missing can
// escape valkey_acl_loads_total{result="unreachable"}.
func (r *ACLReloader) visit(ctx context.Context, vc *valkeyv1.ValkeyCluster, conn *connector, pod *corev1.Pod, file string, want map[string]aclUser) aclNode {
	out := r.node(ctx, vc, conn, pod, file, want)
	if result := aclLoadResult(out); result != "" {
		aclLoads.WithLabelValues(vc.Namespace, vc.Name, result).Inc()
	}
	return out
}

// node loads the node's mounted ACL file and checks what it now runs.
func (r *ACLReloader) node(ctx context.Context, vc *valkeyv1.ValkeyCluster, conn *connector, pod *corev1.Pod, file string, want map[string]aclUser) aclNode {
	log := logf.FromContext(ctx).WithValues("node", pod.Name)
	out := aclNode{Name: pod.Name}
	n, err := conn.dial(ctx, pod.Name, pod.Status.PodIP)
	if err != nil {
		out.Unreachable = err
		log.Info("ACL LOAD failed, will retry next tick", "error", err.Error())
		return out
	}
	defer n.Close()
	info, err := n.Info(ctx, "server", "replication")
	if err != nil {
		out.Unreachable = err
		return out
	}
	version, verr := valkey.ParseVersion(info["server"]["valkey_version"])
	if verr == nil && aclLoadUnsafe(version, info["replication"]["role"]) {
		return r.nodePerUser(ctx, vc, n, file, want, out, version)
	}
	if err := n.AclLoad(ctx); err != nil {
		if valkey.IsServerError(err) {
			out.Rejected = err
		} else {
			out.Unreachable = err
		}
		log.Info("ACL LOAD failed, will retry next tick", "error", err.Error())
		return out
	}
	out.Applied = true
	out.Diff = r.compare(ctx, n, want)
	if out.Diff != "" {
		log.V(1).Info("node's ACL rules differ from the rendered file", "diff", out.Diff)
	}
	return out
}

// nodePerUser brings a replica that would crash on ACL LOAD to the rendered
// rules with ACL SETUSER and ACL DELUSER, which it survives.
func (r *ACLReloader) nodePerUser(ctx context.Context, vc *valkeyv1.ValkeyCluster, n *valkey.Node, file string,
	want map[string]aclUser, out aclNode, version valkey.Version) aclNode {
	log := logf.FromContext(ctx).WithValues("node", out.Name)
	lines, err := n.AclList(ctx)
	if err != nil {
		out.Unreachable = err
		return out
	}
	got, err := parseACLLines(lines)
	if err != nil {
		out.Diff = "unreadable ACL LIST: " + err.Error()
		return out
	}
	set, del, err := perUserACL(file, got)
	if err != nil {
		out.Diff = err.Error()
		return out
	}
	if len(set) == 0 && len(del) == 0 {
		return out
	}
	// Every user's rules are tried on a scratch user first: a node that
	// refuses one keeps all its previous rules, as after a refused ACL LOAD.
	check := func() error {
		defer func() { _ = n.AclDelUser(ctx, render.ACLCheckUser) }()
		for _, u := range set {
			if err := n.AclSetUser(ctx, render.ACLCheckUser, u.Rules...); err != nil {
				return fmt.Errorf("rules of user %q: %w", u.Name, err)
			}
		}
		return nil
	}
	apply := func() error {
		for _, u := range set {
			if err := n.AclSetUser(ctx, u.Name, u.Rules...); err != nil {
				return err
			}
		}
		if len(del) > 0 {
			return n.AclDelUser(ctx, del...)
		}
		return nil
	}
	err = check()
	if err == nil {
		err = apply()
	}
	if err != nil {
		switch {
		case valkey.IsNoPermission(err):
			// Its file predates the operator's per-user grants.
			out.Unsafe, out.UnsafeErr = version.String(), err
		case valkey.IsServerError(err):
			out.Rejected = err
		default:
			out.Unreachable = err
		}
		log.Info("per-user ACL update failed, will retry next tick", "error", err.Error())
		return out
	}
	out.Applied = true
	log.V(1).Info("ACL rules applied one user at a time", "set", len(set), "deleted", del)
	out.Diff = r.compare(ctx, n, want)
	return out
}

// compare describes how the node's ACL LIST differs from want; "" when it
// runs the rendered file.
func (r *ACLReloader) compare(ctx context.Context, n *valkey.Node, want map[string]aclUser) string {
	lines, err := n.AclList(ctx)
	if err != nil {
		// Refused by a file from before the operator user could list
		// ACLs, or no answer: either way not known to be current.
		return "ACL LIST: " + err.Error()
	}
	got, err := parseACLLines(lines)
	if err != nil {
		return "unreadable ACL LIST: " + err.Error()
	}
	return diffACL(want, got)
}

// writeStatus writes only the ACLApplied condition.
func (r *ACLReloader) writeStatus(ctx context.Context, key types.NamespacedName, rep aclReport) error {
	err := updateClusterStatus(ctx, r.Client, r.APIReader, key, func(vc *valkeyv1.ValkeyCluster) bool {
		setCondition(vc, valkeyv1.CondACLApplied, rep.Status, rep.Reason, rep.Message)
		return true
	})
	if err != nil {
		return fmt.Errorf("writing ACL status: %w", err)
	}
	return nil
}
