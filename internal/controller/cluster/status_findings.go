package cluster

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// findings is what one reconcile learned that its status reports. Each
// phase fills its own fields and writes nothing to the status itself:
// clusterStatus turns them into the status once, at the end. A field left
// unset means its phase did not run (the reconcile ended earlier), and the
// status keeps what it said of that.
type findings struct {
	// now stamps the conditions that change.
	now metav1.Time

	// credentialsLost is why the system users' passwords cannot be
	// restored; such a reconcile ends there.
	credentialsLost string

	// tls is the check of the user's Secret; nil without spec.tls.
	tls *tlsFinding

	// refs is whether the spec's references resolve and render; with
	// them, whether the default user is open and the memory headroom.
	refs, defaultUserOpen, headroom *cond

	// placement is whether the pods carry the placement settings as
	// written (PlacementApplied).
	placement *cond

	// volumeSize is how the volumes are sized; noPersistence says the
	// cluster has no volumes, so the condition goes.
	volumeSize    *cond
	noPersistence bool

	// drift is whether the nodes run the rendered live settings.
	drift *cond

	// rolledOut are the rollout generations the nodes all run, once the
	// rollout gate read them.
	rolledOut *[]valkeyv1.RolledOut

	// report is what the plan decided; wave what running it did.
	report *reportFinding
	wave   *waveFinding
}

// cond is one condition as a phase decided it, before it is stamped.
type cond struct {
	status          metav1.ConditionStatus
	reason, message string
}

// tlsFinding is the outcome of checking the TLS Secret.
type tlsFinding struct {
	// failure is the first failed check; nil when the Secret is valid.
	failure *tlssecret.Failure
	// report is what a valid Secret's warnings make of its conditions.
	report tlsReport
	// info describes a valid Secret's certificate, when it parsed.
	info *tlssecret.Info
}

// reportFinding is what the plan phase learned and decided.
type reportFinding struct {
	summary   topology.Summary
	nodeNames []string
	selector  string
	// shards is the shard count the plan works towards.
	shards int
	lead   topology.Action
	state  topology.State
	// containers is ContainersHealthy; versions VersionMatches, nil
	// without a resolved image to compare against.
	containers cond
	versions   *cond
	// liveApplying are the nodes that have not taken a live edit yet.
	liveApplying []string
	// restorePending says spec.restore has not filled the cluster yet.
	restorePending bool
	// aclHeld says the nodes keep the last rendering that resolved.
	aclHeld bool
	// paused says the annotation holds the planner.
	paused bool
}

// waveFinding is what running the wave did.
type waveFinding struct {
	// unreachable names the nodes a wave that only waits could not ask.
	unreachable string
	// dataLost is the last shard lost with its data; actionFailed says
	// which of the wave's actions failed.
	dataLost, actionFailed string
}

// tlsReport is what a valid Secret's warnings make of the TLS conditions.
type tlsReport struct {
	valid    string // TLSValid's message
	expiring bool
	expiry   string // CertificateExpiringSoon's message
	// announce are the warnings that deserve an Event: those the conditions
	// did not carry yet. A warning stands for as long as the Secret is
	// unchanged, and an Event on every reconcile would bury the others.
	announce []tlssecret.Warning
}
