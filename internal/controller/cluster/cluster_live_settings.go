package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/controller/metrics"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/textutil"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// applyLiveSettings brings every node to the live settings it should run
// without a restart: an edit of those alone (planLiveSettings decides) is
// recorded on the node, whose valkey.conf the node controller renders
// again, and set on the running server; a setting changed on a node by
// hand is reported, and set back unless the cluster's config-drift
// annotation says report. A node not reached keeps its edit pending, is
// retried on the next pass and keeps the cluster Progressing until it has
// taken it.
func (r *Reconciler) applyLiveSettings(ctx context.Context, s *clusterScope) error {
	vc, o := s.vc, s.o
	var nodes []liveNode
	for _, name := range o.names() {
		n := o.nodes[name]
		if n.Spec.Lifecycle == valkeyv1.LifecycleLeaving || !n.DeletionTimestamp.IsZero() {
			continue
		}
		want, err := s.desired(n.Spec.ShardIndex)
		if err != nil {
			return err
		}
		desired := want.ValkeySettings
		if refusedSettings(n, desired) {
			// Refused once: the roll brings them, not another try.
			desired = n.Spec.ValkeySettings
		}
		nodes = append(nodes, liveNode{
			name:     name,
			recorded: n.Spec.ValkeySettings,
			desired:  desired,
			pending:  pendingSettings(n),
			running:  o.settings[name],
			unread:   o.settingsUnread[name] != nil,
		})
	}
	revert := vc.Annotations[valkeyv1.AnnotationConfigDrift] != valkeyv1.ConfigDriftReport
	plan := planLiveSettings(nodes, revert)

	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	var applied, stillPending, refused []string
	for _, st := range plan.steps {
		wg.Add(1)
		go func(st liveNodeStep) {
			defer wg.Done()
			res, err := r.liveStep(ctx, s, st)
			mu.Lock()
			defer mu.Unlock()
			var ae apiError
			if err != nil && (res != stepRefused || errors.As(err, &ae)) {
				errs = append(errs, err)
			}
			switch {
			case res == stepRefused:
				refused = append(refused, fmt.Sprintf("node %s refused %s (%v)", st.name, settingValues(st), err))
			case res == stepTook && slices.ContainsFunc(st.pending, func(k string) bool { return slices.Contains(st.set, k) }):
				applied = append(applied, st.name)
			case res == stepTook:
			case len(st.pending) > 0:
				stillPending = append(stillPending, fmt.Sprintf("%s (%s)", st.name, strings.Join(st.pending, ", ")))
			}
		}(st)
	}
	wg.Wait()
	var apiErrs []error
	for _, err := range errs {
		var ae apiError
		if errors.As(err, &ae) {
			apiErrs = append(apiErrs, err)
			continue
		}
		clusterstatus.LogFrom(ctx).Info("live settings not applied; retrying", "error", err.Error())
	}
	slices.Sort(applied)
	slices.Sort(stillPending)
	slices.Sort(refused)
	if len(refused) > 0 {
		r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, valkeyv1.ReasonSettingsRefused, "ApplyLiveSettings",
			"%s; replaced with the new settings instead", textutil.Truncate(strings.Join(refused, "; "), 2000))
	}
	s.found.drift = r.reportLiveSettings(vc, plan, applied, revert)
	s.live = liveOutcome{applying: stillPending, acted: len(refused) > 0 || slices.ContainsFunc(plan.steps, func(st liveNodeStep) bool { return len(st.set) > 0 })}
	return errors.Join(apiErrs...)
}

// stepResult is how one node's step ended.
type stepResult int

const (
	// stepOpen: nothing taken yet (nothing to set, or the node not reached).
	stepOpen stepResult = iota
	// stepTook: the node runs every pending setting.
	stepTook
	// stepRefused: the node's server refused the edit's values.
	stepRefused
)

// apiError marks a failed write to the API server, which fails the pass,
// unlike a node not reached, which is retried on the next one.
type apiError struct{ error }

func (e apiError) Unwrap() error { return e.error }

// liveStep carries out one node's step. A running node is given an edit
// before it is recorded: a value its server refuses is never written into
// the node's valkey.conf, where it would stop the next start; the node is
// marked instead, and the cluster replaces it with the new settings, the
// way any edit the nodes cannot take in place is rolled out (a value no
// server accepts then shows as the new node's failing container). A node
// not reached has the edit recorded and pending, for its next start or
// the next pass.
func (r *Reconciler) liveStep(ctx context.Context, s *clusterScope, st liveNodeStep) (stepResult, error) {
	n := s.o.nodes[st.name]
	if st.record {
		pending := st.pending
		if len(st.set) > 0 {
			switch err := r.setOnNode(ctx, s, st); {
			case valkey.IsServerError(err):
				if err := r.markRefused(ctx, n, st.target); err != nil {
					return stepRefused, err
				}
				return stepRefused, err
			case err != nil:
				if err := r.recordLiveSettings(ctx, n, st.target, pending); err != nil {
					return stepOpen, err
				}
				return stepOpen, err
			}
			pending = nil
		}
		if err := r.recordLiveSettings(ctx, n, st.target, pending); err != nil {
			return stepOpen, err
		}
		if len(pending) == 0 {
			return stepTook, nil
		}
		return stepOpen, nil
	}
	if len(st.set) > 0 {
		if err := r.setOnNode(ctx, s, st); err != nil {
			return stepOpen, err
		}
	} else if !st.confirmed {
		return stepOpen, nil
	}
	if len(st.pending) == 0 {
		return stepTook, nil
	}
	node := n.DeepCopy()
	patch := client.MergeFrom(n.DeepCopy())
	delete(node.Annotations, valkeyv1.AnnotationLiveSettingsPending)
	if err := r.Patch(ctx, node, patch); err != nil {
		return stepOpen, apiError{fmt.Errorf("clearing the pending live settings of node %s: %w", st.name, err)}
	}
	return stepTook, nil
}

// setOnNode sends the step's settings to the running node in one CONFIG
// SET, which Valkey applies all or none, and records an Event for each
// drifted setting it set back.
func (r *Reconciler) setOnNode(ctx context.Context, s *clusterScope, st liveNodeStep) error {
	pod := s.o.pods[st.name]
	if pod == nil || pod.Status.PodIP == "" {
		return fmt.Errorf("node %s has no pod IP", st.name)
	}
	node, err := s.conn.Dial(ctx, st.name, pod.Status.PodIP)
	if err != nil {
		return err
	}
	defer node.Close()
	var kv []string
	for _, k := range st.set {
		kv = append(kv, k, st.target[k])
	}
	if err := node.ConfigSet(ctx, kv...); err != nil {
		return fmt.Errorf("setting %s on node %s: %w", strings.Join(st.set, ", "), st.name, err)
	}
	for _, k := range st.drift {
		if slices.Contains(st.set, k) {
			r.Recorder.Eventf(s.vc, nil, corev1.EventTypeNormal, valkeyv1.ReasonDriftReverted, "RevertDrift",
				"node %s ran %s=%q by hand; set back to %q", st.name, k, s.o.settings[st.name][k], st.target[k])
		}
	}
	return nil
}

// markRefused records on the node that its server refused these settings,
// which makes it outdated (see buildMembers) while they are still asked for.
func (r *Reconciler) markRefused(ctx context.Context, n *valkeyv1.ValkeyNode, settings map[string]string) error {
	node := n.DeepCopy()
	patch := client.MergeFrom(n.DeepCopy())
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[valkeyv1.AnnotationLiveSettingsRefused] = render.SettingsDigest(settings)
	if err := r.Patch(ctx, node, patch); err != nil {
		return apiError{fmt.Errorf("marking node %s as refusing its new settings: %w", n.Name, err)}
	}
	*n = *node
	return nil
}

// refusedSettings says the node's server refused exactly these settings.
func refusedSettings(n *valkeyv1.ValkeyNode, settings map[string]string) bool {
	d, ok := n.Annotations[valkeyv1.AnnotationLiveSettingsRefused]
	return ok && d == render.SettingsDigest(settings)
}

// liveUnsettled says a staying node has not taken the live settings its
// shard asks for: they are not recorded on it yet, the server has not
// confirmed them, or it refused them (and a roll must bring them).
func liveUnsettled(n *valkeyv1.ValkeyNode, settings map[string]string) bool {
	if n.Spec.Lifecycle == valkeyv1.LifecycleLeaving || !n.DeletionTimestamp.IsZero() {
		return false
	}
	return !maps.Equal(n.Spec.ValkeySettings, settings) || len(pendingSettings(n)) > 0
}

// settingValues is the step's settings as key="value", for a message.
func settingValues(st liveNodeStep) string {
	var out []string
	for _, k := range st.set {
		out = append(out, fmt.Sprintf("%s=%q", k, st.target[k]))
	}
	return strings.Join(out, " ")
}

// pendingSettings reads the node's list of live settings not confirmed.
func pendingSettings(n *valkeyv1.ValkeyNode) []string {
	v := n.Annotations[valkeyv1.AnnotationLiveSettingsPending]
	if v == "" {
		return nil
	}
	out := strings.Split(v, ",")
	slices.Sort(out)
	return out
}

// recordLiveSettings writes the settings into the node's spec with the
// live ones being applied listed beside them, in one patch, so an operator
// that stops between this and the node taking them still knows they are
// an edit in flight and not drift.
func (r *Reconciler) recordLiveSettings(ctx context.Context, n *valkeyv1.ValkeyNode, settings map[string]string, pending []string) error {
	node := n.DeepCopy()
	patch := client.MergeFrom(n.DeepCopy())
	node.Spec.ValkeySettings = settings
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[valkeyv1.AnnotationLiveSettingsPending] = strings.Join(pending, ",")
	if len(pending) == 0 {
		delete(node.Annotations, valkeyv1.AnnotationLiveSettingsPending)
	}
	if err := r.Patch(ctx, node, patch); err != nil {
		return apiError{fmt.Errorf("recording live settings on node %s: %w", n.Name, err)}
	}
	clusterstatus.LogFrom(ctx).Info("recorded live settings on the node", "node", n.Name, "pending", pending)
	*n = *node
	return nil
}

// reportLiveSettings decides the ConfigDrift condition, sets the drift
// metric and sends the Events: nodes that took an edit without a restart,
// and drift first seen (repeating it every pass while it is only reported
// would bury every other Event).
func (r *Reconciler) reportLiveSettings(vc *valkeyv1.ValkeyCluster, plan livePlan, applied []string, revert bool) *cond {
	if len(applied) > 0 {
		r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.ReasonSettingsAppliedLive, "ApplyLiveSettings",
			"applied without a restart on %s: %s", strings.Join(applied, ", "), strings.Join(appliedSettings(plan, applied), ", "))
	}
	metrics.ConfigDriftSettings.WithLabelValues(vc.Namespace, vc.Name).Set(float64(plan.driftCount()))
	drifted := plan.drifted()
	switch {
	case len(drifted) > 0:
		action := "set back to the rendered values"
		if !revert {
			action = fmt.Sprintf("left as they are (annotation %s=%s)", valkeyv1.AnnotationConfigDrift, valkeyv1.ConfigDriftReport)
		}
		msg := textutil.Truncate(fmt.Sprintf("nodes run live settings other than rendered: %s; %s", strings.Join(drifted, "; "), action), 2000)
		if !clusterstatus.IsConditionMessage(vc, valkeyv1.CondConfigDrift, msg) {
			r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, valkeyv1.ReasonSettingsDrifted, "CheckSettings", "%s", msg)
		}
		return &cond{metav1.ConditionTrue, valkeyv1.ReasonSettingsDrifted, msg}
	case len(plan.unread) > 0:
		return &cond{metav1.ConditionUnknown, valkeyv1.ReasonSettingsUnread,
			textutil.Truncate("could not read the live settings of "+strings.Join(plan.unread, ", "), 2000)}
	}
	return &cond{metav1.ConditionFalse, valkeyv1.ReasonSettingsInSync, "every running node runs the rendered live settings"}
}

// appliedSettings are the settings the applied nodes took, without repeats.
func appliedSettings(plan livePlan, applied []string) []string {
	var out []string
	for _, st := range plan.steps {
		if slices.Contains(applied, st.name) {
			out = union(out, st.pending)
		}
	}
	return out
}
