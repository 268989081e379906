package reload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/aclplan"
	"github.com/gomomento/valkey-operator/internal/controller/metrics"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/controller/options"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/textutil"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// ACLReloader makes every node of a cluster run the ACL file the cluster
// controller rendered into Secret {cluster}-acl: it issues ACL LOAD (the
// node reads its mounted file) and then compares the node's ACL LIST with
// the rendered file, because the mounted file trails the Secret. It runs on
// a change of that Secret or of the cluster's pods, and on a tick that
// visits no node while every node is known to run the file; the safety
// pass, which does, also reverts ACL SETUSER edits made by hand.
type ACLReloader struct {
	reloader[aclplan.Node, aclPace]
}

// aclPace is empty: what paces the ACL reloader is shared.
type aclPace struct{}

// SetupACLReload registers the ACL reload controller.
func SetupACLReload(mgr ctrl.Manager, opts options.Options, dialer nodeconn.DialFunc, pool *valkey.Pool) error {
	r := &ACLReloader{reloader: reloader[aclplan.Node, aclPace]{
		condition: valkeyv1.CondACLApplied,
		secret:    render.ACLSecretName,
		metrics:   []*prometheus.MetricVec{metrics.ACLLoads.MetricVec},
	}}
	err := r.build(mgr, opts, dialer, pool, "aclreload", nil).Complete(r)
	if err != nil {
		return fmt.Errorf("setting up ACL reload controller: %w", err)
	}
	return nil
}

func (r *ACLReloader) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.reconcile(ctx, req.NamespacedName, r)
}

// manages every cluster: each has system users.
func (r *ACLReloader) manages(*valkeyv1.ValkeyCluster) bool { return true }

func (r *ACLReloader) tick() time.Duration {
	return positiveOr(r.Options.ACLReloadInterval, options.DefaultOptions().ACLReloadInterval)
}

func (r *ACLReloader) sync(ctx context.Context, vc *valkeyv1.ValkeyCluster, aclSecret *corev1.Secret, tick time.Duration) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	key := client.ObjectKeyFromObject(vc)
	file := string(aclSecret.Data[render.KeyACL])
	want, err := aclplan.ParseLines(strings.Split(file, "\n"))
	if err != nil {
		// The cluster controller renders it; a file this cannot read is a
		// defect to report, not a reason to stop reloading.
		return ctrl.Result{}, fmt.Errorf("reading the ACL file in Secret %s: %w", aclSecret.Name, err)
	}
	conn, err := nodeconn.ForCluster(ctx, r, vc, r.Options.ClusterDomain, r.Dialer, r.pool)
	if err != nil {
		return ctrl.Result{}, err
	}
	pods, err := nodeconn.RunningPods(ctx, r, vc)
	if err != nil {
		return ctrl.Result{}, err
	}

	sum := sha256.Sum256([]byte(file))
	hash := hex.EncodeToString(sum[:])
	mem, changed := r.memory(key, hash)
	if ok, safety := r.canIdle(mem, vc, changed, pods, true); ok {
		return ctrl.Result{RequeueAfter: safety}, nil
	}
	// Between ticks, a retry visits only the nodes not yet confirmed.
	full := r.fullDue(mem, changed, tick)
	if full {
		log.V(1).Info("ACL reconcile tick")
	}
	nodes := r.pass(ctx, mem, pods, func(ctx context.Context, pod *corev1.Pod, confirmed string) (aclplan.Node, string) {
		// Outside a full pass, a node already confirmed on this file is
		// reported as it was.
		if !full && confirmed == hash {
			return aclplan.Node{Name: pod.Name}, hash
		}
		out := r.visit(ctx, vc, conn, pod, file, want)
		if out.Current() {
			return out, hash
		}
		return out, ""
	})

	prior := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondACLApplied)
	rep := aclplan.Summarize(aclplan.Input{Secret: aclSecret.Name, Nodes: nodes, Age: r.unsettled(mem), Tick: tick})
	r.settle(mem, rep)
	if prior == nil || prior.Message != rep.Message {
		r.warn(vc, pods, aclSecret.Name, rep)
	}
	if err := r.writeStatus(ctx, key, rep.Status, rep.Reason, rep.Message, nil); err != nil {
		return ctrl.Result{}, err
	}
	r.passed(mem, vc, rep.Status == metav1.ConditionTrue)
	return ctrl.Result{RequeueAfter: rep.Requeue}, nil
}

// settle restarts the unsettled clock once every node runs the file, so
// the next change gets the full window of quick retries.
func (r *ACLReloader) settle(mem *reloadMemory[aclPace], rep aclplan.Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rep.Status == metav1.ConditionTrue {
		mem.since = time.Now()
	}
}

// warn emits the Warnings of a changed condition message.
func (r *ACLReloader) warn(vc *valkeyv1.ValkeyCluster, pods []*corev1.Pod, secretName string, rep aclplan.Report) {
	if len(rep.Rejected) > 0 {
		byName := map[string]*corev1.Pod{}
		for _, p := range pods {
			byName[p.Name] = p
		}
		for _, n := range rep.Rejected {
			// The pod as related object keeps one node's Event from being
			// folded into another's series.
			r.Recorder.Eventf(vc, byName[n.Name], corev1.EventTypeWarning, valkeyv1.ReasonACLRejected, "LoadACL",
				"node %s rejected the ACL file in Secret %q and keeps its previous ACL rules: %s", n.Name, secretName, textutil.Truncate(n.Rejected.Error(), 800))
		}
	}
	if rep.Reason == valkeyv1.ReasonACLLoadUnsafe {
		r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, valkeyv1.ReasonACLLoadUnsafe, "LoadACL", "%s", rep.Message)
	}
}

// visit brings one node to the rendered rules and counts the attempt.
// The count is read off the outcome, so no way a node goes missing can
// escape valkey_acl_loads_total{result="unreachable"}.
func (r *ACLReloader) visit(ctx context.Context, vc *valkeyv1.ValkeyCluster, conn *nodeconn.Connector, pod *corev1.Pod, file string, want map[string]aclplan.User) aclplan.Node {
	out := r.node(ctx, vc, conn, pod, file, want)
	if result := aclplan.LoadResult(out); result != "" {
		metrics.ACLLoads.WithLabelValues(vc.Namespace, vc.Name, result).Inc()
	}
	return out
}

// node loads the node's mounted ACL file, unless it runs the rendered
// rules already, and checks what it now runs.
func (r *ACLReloader) node(ctx context.Context, vc *valkeyv1.ValkeyCluster, conn *nodeconn.Connector, pod *corev1.Pod, file string, want map[string]aclplan.User) aclplan.Node {
	log := logf.FromContext(ctx).WithValues("node", pod.Name)
	out := aclplan.Node{Name: pod.Name}
	n, err := conn.Dial(ctx, pod.Name, pod.Status.PodIP)
	if err != nil {
		out.Unreachable = err
		log.Info("ACL LOAD failed, will retry next tick", "error", err.Error())
		return out
	}
	defer n.Close()
	// A node that already runs the rendered rules is left alone: one ACL
	// LIST per visit, and a LOAD only where something differs (an edit the
	// node has not taken, or rules changed on it by hand).
	if out.Diff, out.Unreachable = r.differs(ctx, n, want); out.Diff == "" || out.Unreachable != nil {
		return out
	}
	info, err := n.Info(ctx, "server", "replication")
	if err != nil {
		out.Unreachable = err
		return out
	}
	version, verr := valkey.ParseVersion(info["server"]["valkey_version"])
	if verr == nil && aclplan.LoadUnsafe(version, info["replication"]["role"]) {
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
	want map[string]aclplan.User, out aclplan.Node, version valkey.Version) aclplan.Node {
	log := logf.FromContext(ctx).WithValues("node", out.Name)
	lines, err := n.AclList(ctx)
	if err != nil {
		out.Unreachable = err
		return out
	}
	got, err := aclplan.ParseLines(lines)
	if err != nil {
		out.Diff = "unreadable ACL LIST: " + err.Error()
		return out
	}
	set, del, err := aclplan.PerUser(file, got)
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

// differs is compare before anything is loaded: a node that does not
// answer is unreachable, not merely different.
func (r *ACLReloader) differs(ctx context.Context, n *valkey.Node, want map[string]aclplan.User) (string, error) {
	lines, err := n.AclList(ctx)
	if err != nil && !valkey.IsServerError(err) {
		return "", err
	}
	return aclDiff(want, lines, err), nil
}

// compare describes how the node's ACL LIST differs from want; "" when it
// runs the rendered file.
func (r *ACLReloader) compare(ctx context.Context, n *valkey.Node, want map[string]aclplan.User) string {
	lines, err := n.AclList(ctx)
	return aclDiff(want, lines, err)
}

// aclDiff is how the rules a node listed differ from want, "" when not.
func aclDiff(want map[string]aclplan.User, lines []string, err error) string {
	if err != nil {
		// Refused by a file from before the operator user could list
		// ACLs, or no answer: either way not known to be current.
		return "ACL LIST: " + err.Error()
	}
	got, err := aclplan.ParseLines(lines)
	if err != nil {
		return "unreadable ACL LIST: " + err.Error()
	}
	return aclplan.Diff(want, got)
}
