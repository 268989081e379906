package cluster

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/textutil"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// clusterStatus is the status one reconcile leaves: prev, with what f
// found. It owns the state, the message, the summary and every condition
// the cluster controller sets; the conditions other controllers write on
// the same object (the reloaders', the autoscaler's, deletion
// protection's) pass through untouched, as does whatever a phase that did
// not run would have said.
//
// Where findings disagree, the later step below wins; the order is the
// precedence, from least to most telling.
func clusterStatus(prev valkeyv1.ValkeyClusterStatus, generation int64, f findings) valkeyv1.ValkeyClusterStatus {
	b := statusBuilder{st: *prev.DeepCopy(), gen: generation, now: f.now}
	if f.credentialsLost != "" {
		b.set(valkeyv1.CondReady, cond{metav1.ConditionFalse, valkeyv1.ReasonCredentialsLost, f.credentialsLost})
		b.set(valkeyv1.CondDegraded, cond{metav1.ConditionTrue, valkeyv1.ReasonCredentialsLost, f.credentialsLost})
	}
	b.checkedTLS(f.tls)
	b.setFound(valkeyv1.CondReferencesResolved, f.refs)
	b.setFound(valkeyv1.CondDefaultUserOpen, f.defaultUserOpen)
	b.setFound(valkeyv1.CondMemoryHeadroom, f.headroom)
	b.setFound(valkeyv1.CondPlacementApplied, f.placement)
	if f.noPersistence {
		meta.RemoveStatusCondition(&b.st.Conditions, valkeyv1.CondVolumeSize)
	}
	b.setFound(valkeyv1.CondVolumeSize, f.volumeSize)
	b.setFound(valkeyv1.CondConfigDrift, f.drift)
	if f.rolledOut != nil {
		b.st.RolledOut = *f.rolledOut
	}
	if f.report != nil {
		b.reported(*f.report)
	}
	if f.tls != nil && f.tls.failure != nil {
		// An invalid Secret overrides the plan's state and Ready, even
		// while a repair runs: the plan's Progressing and Degraded still
		// say what heals.
		b.invalid(*f.tls.failure)
	}
	if f.wave != nil {
		b.ranWave(*f.wave)
	}
	return b.st
}

// statusBuilder stamps the conditions clusterStatus sets with the
// generation acted on and, when they change, the time given.
type statusBuilder struct {
	st  valkeyv1.ValkeyClusterStatus
	gen int64
	now metav1.Time
}

func (b *statusBuilder) set(typ string, c cond) {
	meta.SetStatusCondition(&b.st.Conditions, metav1.Condition{Type: typ, Status: c.status, Reason: c.reason,
		Message: c.message, ObservedGeneration: b.gen, LastTransitionTime: b.now})
}

// setFound sets a condition its phase decided, and keeps the previous one
// when the phase did not run.
func (b *statusBuilder) setFound(typ string, c *cond) {
	if c != nil {
		b.set(typ, *c)
	}
}

// checkedTLS reports a valid Secret. A cluster that was Invalid goes back
// to where it was: bootstrap resumes, or a formed cluster passes Creating
// on its way to Active when the plan runs.
func (b *statusBuilder) checkedTLS(t *tlsFinding) {
	if t == nil || t.failure != nil {
		return
	}
	if b.st.State == valkeyv1.StateInvalid {
		b.st.State, b.st.Message = valkeyv1.StateCreating, ""
	}
	if t.info != nil {
		notAfter := metav1.NewTime(t.info.Leaf.NotAfter)
		if b.st.TLS == nil {
			b.st.TLS = &valkeyv1.TLSStatus{}
		}
		b.st.TLS.Fingerprint = t.info.Leaf.Fingerprint
		b.st.TLS.NotAfter = &notAfter
	}
	b.set(valkeyv1.CondTLSValid, cond{metav1.ConditionTrue, valkeyv1.ReasonValid, t.report.valid})
	reason := valkeyv1.ReasonNotExpiring
	if t.report.expiring {
		reason = tlssecret.ReasonCertificateExpiringSoon
	}
	b.set(valkeyv1.CondCertificateExpiringSoon, cond{clusterstatus.BoolStatus(t.report.expiring), reason, t.report.expiry})
}

// invalid writes a TLS failure into the state and conditions.
func (b *statusBuilder) invalid(f tlssecret.Failure) {
	b.st.State, b.st.Message = valkeyv1.StateInvalid, f.Message
	b.set(valkeyv1.CondTLSValid, cond{metav1.ConditionFalse, f.Reason, f.Message})
	b.set(valkeyv1.CondReady, cond{metav1.ConditionFalse, valkeyv1.ReasonInvalid, f.Message})
}

// reported writes the summary and what the plan means, then the holds
// that keep a converged plan from reading as converged.
func (b *statusBuilder) reported(r reportFinding) {
	b.paused(r.paused)
	b.set(valkeyv1.CondContainersHealthy, r.containers)
	b.setFound(valkeyv1.CondVersionMatches, r.versions)
	b.summary(r)
	b.planned(r.lead, r.state, r.shards)
	if b.st.Message == "" && b.st.State != valkeyv1.StateActive &&
		r.containers.status == metav1.ConditionFalse && cannotStart[r.containers.reason] {
		// A pod that cannot pull its image or was refused by the apiserver
		// is why the cluster waits: kubectl get shows the kubelet's or the
		// apiserver's words.
		b.st.Message = r.containers.message
	}
	if r.lead.Done() && len(r.liveApplying) > 0 {
		// The topology is done, but nodes have yet to take a live edit.
		b.set(valkeyv1.CondProgressing, cond{metav1.ConditionTrue, valkeyv1.ReasonApplyingSettings,
			textutil.Truncate("applying live settings without a restart; not yet taken by "+strings.Join(r.liveApplying, "; "), 2000)})
	}
	if r.restorePending {
		b.restoreGate(r.lead)
	}
	if r.aclHeld && r.lead.Done() {
		b.specHeld()
	}
}

// summary writes the observed shape.
func (b *statusBuilder) summary(r reportFinding) {
	st, s := &b.st, r.summary
	st.Shards = int32(s.Shards)
	st.ReadyNodes = int32(s.ReadyNodes)
	st.SlotsAssigned = int32(s.SlotsAssigned)
	st.Nodes = r.nodeNames
	st.Selector = r.selector
	st.ShardStatuses = st.ShardStatuses[:0]
	for _, sh := range s.Shard {
		st.ShardStatuses = append(st.ShardStatuses, valkeyv1.ShardStatus{
			Index:     int32(sh.Index),
			Primary:   sh.Primary,
			Replicas:  sh.Replicas,
			Slots:     topology.FormatRanges(sh.Slots),
			SlotCount: int32(sh.SlotCount),
		})
	}
	st.Resharding = resharding(st.Resharding, s)
}

// planned sets the state and Ready/Progressing/Degraded from the
// planner's answer, working towards shards.
func (b *statusBuilder) planned(a topology.Action, state topology.State, shards int) {
	b.st.State, b.st.Message = valkeyv1.ClusterState(state), ""
	if a.Cause == topology.CausePodUnschedulable {
		// What a person must act on, in the scheduler's own words, where
		// kubectl get shows it.
		b.st.Message = a.Describe()
	}
	if state == topology.StateActive && b.st.TargetSpec != nil && a.Done() {
		// Formed: bootstrap's snapshot is no longer the shape wanted.
		b.st.TargetSpec = nil
	}
	ready := a.Done()
	readyMsg := a.Describe()
	if ready {
		readyMsg = fmt.Sprintf("%d shards serving all %d slots", b.st.Shards, topology.TotalSlots)
	}
	b.set(valkeyv1.CondReady, cond{clusterstatus.BoolStatus(ready), readyReason(ready, state, a), readyMsg})
	progress := cond{metav1.ConditionFalse, valkeyv1.ReasonConverged, "cluster matches its spec"}
	if !a.Done() {
		progress = cond{metav1.ConditionTrue, actionReason(a), a.Describe()}
	}
	b.set(valkeyv1.CondProgressing, progress)
	dstatus, dreason, dmsg := degraded(state, a, int(b.st.Shards), shards)
	b.set(valkeyv1.CondDegraded, cond{dstatus, dreason, dmsg})
}

// restoreGate keeps a cluster that spec.restore has not filled out of
// Active and Ready: clients and backups must not take an empty or half
// filled cluster for the backup's data. Once the planner has nothing left
// to do, Ready=False with reason Restoring is what tells the restore
// controller to begin.
func (b *statusBuilder) restoreGate(a topology.Action) {
	if b.st.State == valkeyv1.StateActive {
		b.st.State = valkeyv1.StateCreating
	}
	if !a.Done() {
		return
	}
	reason, msg := valkeyv1.ReasonRestoring, "formed; the restore is about to begin"
	if st := b.st.Restore; st != nil {
		if st.Phase == valkeyv1.RestoreFailed {
			reason = valkeyv1.ReasonRestoreFailed
		}
		if st.Message != "" {
			msg = st.Message
		}
	}
	b.set(valkeyv1.CondReady, cond{metav1.ConditionFalse, reason, msg})
	b.set(valkeyv1.CondProgressing, cond{clusterstatus.BoolStatus(reason == valkeyv1.ReasonRestoring), reason, msg})
}

// specHeld keeps a cluster whose references do not resolve from reading as
// converged: the nodes run the last rendering that resolved, not what the
// spec now asks for.
func (b *statusBuilder) specHeld() {
	why := "the spec's references do not resolve"
	if c := meta.FindStatusCondition(b.st.Conditions, valkeyv1.CondReferencesResolved); c != nil {
		why = c.Message
	}
	msg := "the spec is not fully applied: " + why + "; the nodes keep the last configuration that resolved"
	b.set(valkeyv1.CondReady, cond{metav1.ConditionFalse, valkeyv1.ReasonReferencesUnresolved, msg})
	b.set(valkeyv1.CondProgressing, cond{metav1.ConditionFalse, valkeyv1.ReasonReferencesUnresolved, msg})
}

// paused reports the annotation. What a paused cluster runs on resume is
// the plan's word: its wait (topology.CausePaused) is the lead.
func (b *statusBuilder) paused(on bool) {
	if on {
		b.set(valkeyv1.CondPaused, cond{metav1.ConditionTrue, valkeyv1.ReasonPaused,
			fmt.Sprintf("annotation %s=true holds every topology action", valkeyv1.AnnotationPaused)})
	} else {
		b.set(valkeyv1.CondPaused, cond{metav1.ConditionFalse, valkeyv1.ReasonNotPaused, "the planner acts"})
	}
}

// ranWave reports what acting did. Each of these says more about
// Progressing than the plan: a wave that only waits names the nodes it
// could not ask, and a failed action says what failed.
func (b *statusBuilder) ranWave(w waveFinding) {
	if w.unreachable != "" {
		b.set(valkeyv1.CondProgressing, cond{metav1.ConditionTrue, valkeyv1.ReasonUnreachable, w.unreachable})
	}
	if w.dataLost != "" {
		b.set(valkeyv1.CondDataLost, cond{metav1.ConditionTrue, valkeyv1.ReasonPrimaryLostNoReplica, w.dataLost})
	}
	if w.actionFailed != "" {
		b.set(valkeyv1.CondProgressing, cond{metav1.ConditionTrue, valkeyv1.ReasonActionFailed, w.actionFailed})
	}
}
