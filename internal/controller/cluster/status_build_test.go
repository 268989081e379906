package cluster

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// wantCond is a condition a case expects: its status, reason, and a part
// of its message ("" to not look at it).
type wantCond struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

// converged is the previous status of a formed cluster with nothing to do,
// carrying a condition another controller owns.
func converged() valkeyv1.ValkeyClusterStatus {
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := func(typ string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: 1, LastTransitionTime: then}
	}
	return valkeyv1.ValkeyClusterStatus{State: valkeyv1.StateActive, Shards: 3, Conditions: []metav1.Condition{
		c(valkeyv1.CondReady, metav1.ConditionTrue, valkeyv1.ReasonFormed, "3 shards serving all 16384 slots"),
		c(valkeyv1.CondProgressing, metav1.ConditionFalse, valkeyv1.ReasonConverged, "cluster matches its spec"),
		c(valkeyv1.CondReferencesResolved, metav1.ConditionTrue, valkeyv1.ReasonResolved, "config chain [base] resolved to image v"),
		c(valkeyv1.CondConfigDrift, metav1.ConditionFalse, valkeyv1.ReasonSettingsInSync, "in sync"),
		c(valkeyv1.CondACLApplied, metav1.ConditionTrue, "Applied", "every node runs the ACL"),
		c(valkeyv1.CondDeletionBlocked, metav1.ConditionFalse, "NotBlocked", "nothing blocks"),
	}}
}

// planFinding is a reconcile that got as far as the plan, which says lead.
func planFinding(lead topology.Action, state topology.State) *reportFinding {
	return &reportFinding{summary: topology.Summary{Shards: 3}, shards: 3, lead: lead, state: state,
		containers: cond{metav1.ConditionTrue, valkeyv1.ReasonContainersRunning, "running"}}
}

func TestClusterStatusPrecedence(t *testing.T) {
	done := topology.Action{Kind: topology.KindDone, Tier: topology.TierSteady}
	repair := topology.Action{Kind: topology.KindFailover, Tier: topology.TierStability, Reason: "primary lost", Detail: "c-00000"}
	create := topology.Action{Kind: topology.KindCreateNode, Tier: topology.TierTopology, Reason: "creating node"}
	// held is the planner's wait for create while the cluster is paused.
	held := topology.Action{Kind: topology.KindWait, Tier: create.Tier, Cause: topology.CausePaused,
		Reason: topology.ReasonPaused, Detail: create.Describe()}
	badTLS := &tlssecret.Failure{Reason: "MissingKey", Message: `TLS Secret "c-tls" has no tls.key`}
	unresolved := cond{metav1.ConditionFalse, "ConfigNotFound", "ValkeyConfig typo not found"}
	restoring := converged()
	restoring.Restore = &valkeyv1.RestoreStatus{Phase: valkeyv1.RestoreRunning, Message: "loading shard 1 of 3"}
	invalid := converged()
	invalid.State, invalid.Message = valkeyv1.StateInvalid, badTLS.Message
	withAction := func(lead topology.Action, state topology.State, mod func(*reportFinding)) *reportFinding {
		r := planFinding(lead, state)
		mod(r)
		return r
	}
	for _, tt := range []struct {
		name      string
		prev      *valkeyv1.ValkeyClusterStatus // nil: converged()
		f         findings
		wantState valkeyv1.ClusterState
		wantMsg   string
		want      map[string]wantCond
	}{{
		name: "TLS invalid during a repair: Invalid, while Progressing and Degraded say what heals",
		f:    findings{tls: &tlsFinding{failure: badTLS}, report: planFinding(repair, topology.StateUpdating)},
		// The state and Ready are the TLS failure's; the repair stays visible.
		wantState: valkeyv1.StateInvalid, wantMsg: badTLS.Message,
		want: map[string]wantCond{
			valkeyv1.CondTLSValid:    {metav1.ConditionFalse, "MissingKey", badTLS.Message},
			valkeyv1.CondReady:       {metav1.ConditionFalse, valkeyv1.ReasonInvalid, badTLS.Message},
			valkeyv1.CondProgressing: {metav1.ConditionTrue, actionReason(repair), "primary lost"},
			valkeyv1.CondDegraded:    {metav1.ConditionTrue, actionReason(repair), "c-00000"},
		},
	}, {
		name: "references unresolved while converged: neither Ready nor converged",
		f: findings{refs: &unresolved,
			report: withAction(done, topology.StateActive, func(r *reportFinding) { r.aclHeld = true })},
		wantState: valkeyv1.StateActive,
		want: map[string]wantCond{
			valkeyv1.CondReferencesResolved: {metav1.ConditionFalse, "ConfigNotFound", unresolved.message},
			valkeyv1.CondReady:              {metav1.ConditionFalse, valkeyv1.ReasonReferencesUnresolved, unresolved.message},
			valkeyv1.CondProgressing:        {metav1.ConditionFalse, valkeyv1.ReasonReferencesUnresolved, "last configuration that resolved"},
		},
	}, {
		name:      "paused with a wave to run: Progressing names what runs on resume",
		f:         findings{report: withAction(held, topology.StateUpdating, func(r *reportFinding) { r.paused = true }), wave: &waveFinding{}},
		wantState: valkeyv1.StateUpdating,
		want: map[string]wantCond{
			valkeyv1.CondPaused:      {metav1.ConditionTrue, valkeyv1.ReasonPaused, valkeyv1.AnnotationPaused},
			valkeyv1.CondProgressing: {metav1.ConditionTrue, valkeyv1.ReasonPaused, "paused; next on resume: creating node"},
			valkeyv1.CondReady:       {metav1.ConditionFalse, valkeyv1.ReasonPaused, "paused; next on resume: creating node"},
		},
	}, {
		name:      "restore gate: formed but not yet restored is Creating, not Ready",
		prev:      &restoring,
		f:         findings{report: withAction(done, topology.StateActive, func(r *reportFinding) { r.restorePending = true })},
		wantState: valkeyv1.StateCreating,
		want: map[string]wantCond{
			valkeyv1.CondReady:       {metav1.ConditionFalse, valkeyv1.ReasonRestoring, "loading shard 1 of 3"},
			valkeyv1.CondProgressing: {metav1.ConditionTrue, valkeyv1.ReasonRestoring, "loading shard 1 of 3"},
		},
	}, {
		name: "a pod the scheduler cannot place: Updating, its reason in status.message and Progressing",
		f: findings{report: planFinding(topology.Action{Kind: topology.KindWait, Tier: topology.TierUpdate, Cause: topology.CausePodUnschedulable,
			Reason: topology.ReasonPodUnschedulable, Detail: "c-1: 0/3 nodes are available: 3 node(s) had untolerated taint"}, topology.StateUpdating)},
		wantState: valkeyv1.StateUpdating,
		wantMsg:   "pod cannot be scheduled: c-1: 0/3 nodes are available: 3 node(s) had untolerated taint",
		want: map[string]wantCond{
			valkeyv1.CondProgressing: {metav1.ConditionTrue, valkeyv1.ReasonPodUnschedulable, "3 node(s) had untolerated taint"},
			valkeyv1.CondReady:       {metav1.ConditionFalse, valkeyv1.ReasonPodUnschedulable, "untolerated taint"},
		},
	}, {
		name: "a pod that cannot pull its image during bootstrap: Creating, the kubelet's reason in status.message",
		f: findings{report: withAction(topology.Action{Kind: topology.KindWait, Tier: topology.TierBootstrap, Reason: "waiting for pod to run", Detail: "c-1"},
			topology.StateCreating, func(r *reportFinding) {
				r.containers = cond{metav1.ConditionFalse, "ErrImagePull", `node c-1: container valkey: ErrImagePull: failed to pull and unpack image "reg/valkey:8": 401 Unauthorized`}
			})},
		wantState: valkeyv1.StateCreating,
		wantMsg:   `node c-1: container valkey: ErrImagePull: failed to pull and unpack image "reg/valkey:8": 401 Unauthorized`,
		want: map[string]wantCond{
			valkeyv1.CondContainersHealthy: {metav1.ConditionFalse, "ErrImagePull", "401 Unauthorized"},
		},
	}, {
		name: "a pod the apiserver refused: Creating, the refusal in status.message",
		f: findings{report: withAction(topology.Action{Kind: topology.KindWait, Tier: topology.TierBootstrap, Reason: "waiting for pod to run", Detail: "c-1"},
			topology.StateCreating, func(r *reportFinding) {
				r.containers = cond{metav1.ConditionFalse, valkeyv1.ReasonPodRefused, `node c-1: pod refused by the apiserver: pods "c-1" is forbidden: no PriorityClass with name nope was found`}
			})},
		wantState: valkeyv1.StateCreating,
		wantMsg:   `node c-1: pod refused by the apiserver: pods "c-1" is forbidden: no PriorityClass with name nope was found`,
		want: map[string]wantCond{
			valkeyv1.CondContainersHealthy: {metav1.ConditionFalse, valkeyv1.ReasonPodRefused, "no PriorityClass with name nope"},
		},
	}, {
		name: "a container crashing is not a reason the cluster cannot start: status.message stays the plan's",
		f: findings{report: withAction(topology.Action{Kind: topology.KindWait, Tier: topology.TierBootstrap, Reason: "waiting for pod to run", Detail: "c-1"},
			topology.StateCreating, func(r *reportFinding) {
				r.containers = cond{metav1.ConditionFalse, valkeyv1.ReasonContainerExited, "node c-1: container valkey exited with code 1"}
			})},
		wantState: valkeyv1.StateCreating,
		wantMsg:   "",
		want: map[string]wantCond{
			valkeyv1.CondContainersHealthy: {metav1.ConditionFalse, valkeyv1.ReasonContainerExited, "exited with code 1"},
		},
	}, {
		name: "an image pull failing on an Active cluster (a roll's new node): the old nodes serve, status.message stays empty",
		f: findings{report: withAction(done, topology.StateActive, func(r *reportFinding) {
			r.containers = cond{metav1.ConditionFalse, "ImagePullBackOff", "node c-9: container valkey: ImagePullBackOff"}
		})},
		wantState: valkeyv1.StateActive,
		wantMsg:   "",
		want: map[string]wantCond{
			valkeyv1.CondContainersHealthy: {metav1.ConditionFalse, "ImagePullBackOff", "ImagePullBackOff"},
		},
	}, {
		name:      "live settings applying on a converged cluster: Ready, yet Progressing",
		f:         findings{report: withAction(done, topology.StateActive, func(r *reportFinding) { r.liveApplying = []string{"c-a (maxmemory-policy)"} })},
		wantState: valkeyv1.StateActive,
		want: map[string]wantCond{
			valkeyv1.CondReady:       {metav1.ConditionTrue, valkeyv1.ReasonFormed, "3 shards"},
			valkeyv1.CondProgressing: {metav1.ConditionTrue, valkeyv1.ReasonApplyingSettings, "c-a (maxmemory-policy)"},
			valkeyv1.CondDegraded:    {metav1.ConditionFalse, valkeyv1.ReasonHealthy, ""},
		},
	}, {
		name:      "action failed: Progressing says what failed",
		f:         findings{report: planFinding(create, topology.StateUpdating), wave: &waveFinding{actionFailed: "1 of 1 actions failed; CreateNode failed: quota"}},
		wantState: valkeyv1.StateUpdating,
		want: map[string]wantCond{
			valkeyv1.CondProgressing: {metav1.ConditionTrue, valkeyv1.ReasonActionFailed, "quota"},
			valkeyv1.CondReady:       {metav1.ConditionFalse, actionReason(create), ""},
		},
	}, {
		name:      "unreachable nodes on a converged cluster: still Active and Ready",
		f:         findings{report: planFinding(done, topology.StateActive), wave: &waveFinding{unreachable: "cannot reach 1 node(s) [c-b]: timeout"}},
		wantState: valkeyv1.StateActive,
		want: map[string]wantCond{
			valkeyv1.CondReady:       {metav1.ConditionTrue, valkeyv1.ReasonFormed, ""},
			valkeyv1.CondProgressing: {metav1.ConditionTrue, valkeyv1.ReasonUnreachable, "[c-b]"},
		},
	}, {
		name:      "an early-ending reconcile changes only what it found",
		f:         findings{refs: &unresolved},
		wantState: valkeyv1.StateActive,
		want: map[string]wantCond{
			valkeyv1.CondReferencesResolved: {metav1.ConditionFalse, "ConfigNotFound", unresolved.message},
			valkeyv1.CondReady:              {metav1.ConditionTrue, valkeyv1.ReasonFormed, "3 shards"},
			valkeyv1.CondProgressing:        {metav1.ConditionFalse, valkeyv1.ReasonConverged, ""},
			valkeyv1.CondConfigDrift:        {metav1.ConditionFalse, valkeyv1.ReasonSettingsInSync, ""},
		},
	}, {
		name:      "a TLS Secret valid again ends Invalid before the plan runs",
		prev:      &invalid,
		f:         findings{tls: &tlsFinding{report: tlsReport{valid: `TLS Secret "c-tls" is valid`, expiry: "certificate valid until then"}}},
		wantState: valkeyv1.StateCreating,
		want: map[string]wantCond{
			valkeyv1.CondTLSValid:                {metav1.ConditionTrue, valkeyv1.ReasonValid, "is valid"},
			valkeyv1.CondCertificateExpiringSoon: {metav1.ConditionFalse, valkeyv1.ReasonNotExpiring, ""},
		},
	}, {
		name:      "credentials lost: not Ready and Degraded, state kept",
		f:         findings{credentialsLost: "the passwords Secret is gone"},
		wantState: valkeyv1.StateActive,
		want: map[string]wantCond{
			valkeyv1.CondReady:    {metav1.ConditionFalse, valkeyv1.ReasonCredentialsLost, "gone"},
			valkeyv1.CondDegraded: {metav1.ConditionTrue, valkeyv1.ReasonCredentialsLost, "gone"},
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.prev == nil {
				c := converged()
				tt.prev = &c
			}
			prev := tt.prev.DeepCopy()
			got := clusterStatus(*tt.prev, 2, tt.f)
			if got.State != tt.wantState || got.Message != tt.wantMsg {
				t.Errorf("state %s %q, want %s %q", got.State, got.Message, tt.wantState, tt.wantMsg)
			}
			for typ, w := range tt.want {
				c := meta.FindStatusCondition(got.Conditions, typ)
				if c == nil {
					t.Errorf("no %s condition", typ)
					continue
				}
				if c.Status != w.status || c.Reason != w.reason || !strings.Contains(c.Message, w.message) {
					t.Errorf("%s %s/%s %q, want %s/%s containing %q", typ, c.Status, c.Reason, c.Message, w.status, w.reason, w.message)
				}
			}
			// Other controllers' conditions pass through untouched, and
			// the previous status is not written to.
			for _, typ := range []string{valkeyv1.CondACLApplied, valkeyv1.CondDeletionBlocked} {
				if was, is := meta.FindStatusCondition(prev.Conditions, typ), meta.FindStatusCondition(got.Conditions, typ); was != nil && (is == nil || *is != *was) {
					t.Errorf("%s changed from %+v to %+v", typ, was, is)
				}
			}
			if !reflect.DeepEqual(prev, tt.prev) {
				t.Error("clusterStatus wrote to the previous status")
			}
		})
	}
}

// A condition that changes is stamped with the time given and the
// generation acted on; one that does not keeps when it last changed.
func TestClusterStatusStamps(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	unresolved := cond{metav1.ConditionFalse, "ConfigNotFound", "missing"}
	got := clusterStatus(converged(), 7, findings{now: now, refs: &unresolved,
		drift: &cond{metav1.ConditionFalse, valkeyv1.ReasonSettingsInSync, "in sync"}})
	refs := meta.FindStatusCondition(got.Conditions, valkeyv1.CondReferencesResolved)
	if !refs.LastTransitionTime.Equal(&now) || refs.ObservedGeneration != 7 {
		t.Errorf("ReferencesResolved changed at %v for generation %d, want %v and 7", refs.LastTransitionTime, refs.ObservedGeneration, now)
	}
	drift := meta.FindStatusCondition(got.Conditions, valkeyv1.CondConfigDrift)
	if drift.LastTransitionTime.Equal(&now) || drift.ObservedGeneration != 7 {
		t.Errorf("ConfigDrift, unchanged, says it changed at %v (generation %d)", drift.LastTransitionTime, drift.ObservedGeneration)
	}
}
