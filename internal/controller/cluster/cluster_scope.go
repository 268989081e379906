package cluster

import (
	"time"

	"k8s.io/client-go/tools/events"
	ctrlrt "sigs.k8s.io/controller-runtime"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/looks"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/controller/options"
	"github.com/gomomento/valkey-operator/internal/controller/watch"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/resolve"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
	"github.com/gomomento/valkey-operator/internal/topology"
	"github.com/gomomento/valkey-operator/internal/valkey"
	corev1 "k8s.io/api/core/v1"
)

// Reconciler drives a ValkeyCluster: validate, resolve, render the
// cluster-level objects, observe every node, then act on the planner's
// next wave.
type Reconciler struct {
	ctrl.Client
	// APIReader reads around the cache where a stale answer would be harmful.
	APIReader ctrl.Reader
	Options   options.Options
	Recorder  events.EventRecorder
	// Dialer opens connections to nodes; nil dials directly.
	Dialer nodeconn.DialFunc
	// Pool keeps the nodes' connections between passes; nil dials.
	Pool *valkey.Pool
	// Looks keeps each node's latest INFO answer for the controllers that
	// can use one a moment old; nil keeps none.
	Looks *looks.Store
	// Secrets watches the TLS Secrets clusters reference, which the cache
	// does not hold; nil watches none.
	Secrets *watch.SecretWatches
	// expected holds the nodes created and not yet in the cache.
	expected nodeExpectations
}

// clusterScope is what one reconcile of a cluster learns, phase by phase:
// each phase reads what the earlier ones set and adds its own.
type clusterScope struct {
	vc *valkeyv1.ValkeyCluster
	rc render.Cluster

	// From the base objects: the system users' passwords.
	passwords render.Passwords

	// From TLS: the check of the user's Secret. While it failed, only
	// healing continues, and nodeCA is the CA the nodes run with.
	tls    tlsCheck
	nodeCA []byte

	// From resolve: the config, image and roles. res is nil when the
	// config chain does not resolve; aclHeld says the ACL Secret keeps
	// what it has because the bindings (or the config) do not resolve.
	res     *resolve.Result
	users   []resolve.User
	aclHeld bool

	// From observe: the nodes, pods and views, how to reach the nodes, the
	// spec each shard's new nodes get, and the nodes created that the
	// cache does not show yet.
	o       *observed
	conn    *nodeconn.Connector
	desired func(shard int32) (valkeyv1.ValkeyNodeSpec, error)
	unseen  []string

	// From the derived objects: a credentials rotation is under way; what
	// the live settings pass left.
	rotating bool
	live     liveOutcome

	// From plan: what the planner was given and decided, and the nodes
	// whose containers keep failing, with why creations are held.
	creating bool
	in       topology.Input
	wave     topology.Wave
	failures []containerFailure
	held     string
	// versionMismatch says which nodes run another Valkey version than
	// their image declares, or which cannot load the data of a newer
	// primary they were downgraded under; "" when none does.
	// versionReason is the VersionMatches reason that goes with it.
	versionMismatch, versionReason string

	// found is what the status reports, phase by phase.
	found findings
}

// phaseResult is how a phase ends: done ends the reconcile with result, as
// an error does; otherwise the next phase runs.
type phaseResult struct {
	done   bool
	result ctrlrt.Result
}

// nextPhase lets the reconcile go on.
var nextPhase = phaseResult{}

// requeueAfter ends the reconcile, to look again after d.
func requeueAfter(d time.Duration) phaseResult {
	return phaseResult{done: true, result: ctrlrt.Result{RequeueAfter: d}}
}

// tlsCheck is the outcome of validating a cluster's TLS Secret.
type tlsCheck struct {
	// Failure is the first failed check, nil when the Secret is valid.
	Failure *tlssecret.Failure
	// Secret is the user's Secret when it is valid.
	Secret *corev1.Secret
	// Info describes the certificate when it could be parsed.
	Info *tlssecret.Info
}

// liveOutcome is what the live settings pass leaves for the status and
// for when to look again.
type liveOutcome struct {
	// applying are the nodes (with their settings) that have not taken a
	// live edit yet.
	applying []string
	// acted: something was set, so the nodes are read again soon.
	acted bool
}

// busy says the cluster is not converged on its live settings, or was
// just changed, so it is looked at again soon rather than at the safety
// pass.
func (l liveOutcome) busy() bool { return len(l.applying) > 0 || l.acted }

// containerFailure is one container that failed, in the container's words.
type containerFailure struct {
	node    string
	reason  string
	message string
	// exited: the Valkey process ended; with restartPolicy Never the node
	// is lost and will be replaced. An exporter that ends costs only its
	// metrics.
	exited bool
}
