package controller

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
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
	"github.com/gomomento/valkey-operator/internal/autoscale"
)

// maxSamples is the API's bound on a node's sample history.
const maxSamples = 200

// defaultScaleInWindow is the history kept for a cluster without
// autoscaling: the documented default window, so turning autoscaling on
// does not start from nothing.
const defaultScaleInWindow = 300 * time.Second

// sampleTimeout bounds one node's INFO, so a silent node costs one
// sampling pass a few seconds, not the whole interval.
const sampleTimeout = 5 * time.Second

// Autoscaler samples every node of every cluster on a fixed interval (INFO
// from the node itself, no metrics-server), publishes the samples in the
// ValkeyNode's status and as metrics, and for a cluster with
// spec.autoscaling decides status.autoscaling.desiredShards, which the
// cluster controller takes as its shard target.
type Autoscaler struct {
	client.Client
	APIReader client.Reader
	Options   Options
	Recorder  events.EventRecorder
	Dialer    DialFunc

	mu sync.Mutex
	// readings are each pod's last counters, by pod UID: a rate needs the
	// previous reading of the same process. Losing them (a restart) costs
	// one sample without CPU and bandwidth.
	readings map[types.UID]autoscale.Reading
	// sampled is when each cluster was last sampled, so events between
	// ticks re-evaluate without sampling again.
	sampled map[types.NamespacedName]time.Time
	// nodes are the node names each cluster has metric series for.
	nodes map[types.NamespacedName]map[string]bool
}

// SetupAutoscaler registers the sampling and autoscaling controller.
func SetupAutoscaler(mgr ctrl.Manager, opts Options, dialer DialFunc) error {
	r := &Autoscaler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Options:   opts,
		Recorder:  mgr.GetEventRecorder("valkey-operator"),
		Dialer:    dialer,
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("autoscaler").
		// Spec edits (autoscaling added, removed or changed) are acted on at
		// once; the rest waits for the tick.
		For(&valkeyv1.ValkeyCluster{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, clusterChangedFor(valkeyv1.CondProgressing, nil)))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r); err != nil {
		return fmt.Errorf("setting up autoscaler: %w", err)
	}
	return nil
}

func (r *Autoscaler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var vc valkeyv1.ValkeyCluster
	if err := r.Get(ctx, req.NamespacedName, &vc); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !vc.DeletionTimestamp.IsZero() {
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	log := logf.FromContext(ctx).WithValues("cluster", vc.Name, "namespace", vc.Namespace)
	ctx = logf.IntoContext(ctx, log)
	interval := r.interval()

	var list valkeyv1.ValkeyNodeList
	if err := r.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels{valkeyv1.LabelInstance: vc.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing nodes: %w", err)
	}
	nodes := make([]*valkeyv1.ValkeyNode, len(list.Items))
	for i := range list.Items {
		nodes[i] = &list.Items[i]
	}

	next := interval
	if due, wait := r.due(req.NamespacedName, interval); due {
		if err := r.sample(ctx, &vc, nodes); err != nil {
			// A cluster that cannot be sampled yet (no Secret, no pod) is
			// retried on the tick; the decision runs on what status holds.
			log.V(1).Info("sampling failed", "error", err.Error())
		}
	} else {
		next = wait
	}
	if err := r.evaluate(ctx, req.NamespacedName, nodes); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: next}, nil
}

func (r *Autoscaler) interval() time.Duration {
	if r.Options.SampleInterval > 0 {
		return r.Options.SampleInterval
	}
	return DefaultOptions().SampleInterval
}

// due says whether the cluster's tick has come, and otherwise how long is
// left of it.
func (r *Autoscaler) due(key types.NamespacedName, interval time.Duration) (bool, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sampled == nil {
		r.sampled = map[types.NamespacedName]time.Time{}
	}
	now := time.Now()
	// A tenth of the interval of slack keeps a requeue that fires a little
	// early from skipping a whole tick.
	if last, ok := r.sampled[key]; ok && now.Sub(last) < interval-interval/10 {
		return false, interval - now.Sub(last)
	}
	r.sampled[key] = now
	return true, 0
}

func (r *Autoscaler) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.sampled, key)
	names := r.nodes[key]
	delete(r.nodes, key)
	r.mu.Unlock()
	for n := range names {
		forgetNodeMetrics(key.Namespace, key.Name, n)
	}
	forgetAutoscalingMetrics(key.Namespace, key.Name)
}

// sample reads every running node once, concurrently, and writes each
// node's new sample into its status.
func (r *Autoscaler) sample(ctx context.Context, vc *valkeyv1.ValkeyCluster, nodes []*valkeyv1.ValkeyNode) error {
	conn, err := nodeConnector(ctx, r, vc, r.Options.ClusterDomain, r.Dialer)
	if err != nil {
		return err
	}
	pods, err := runningPods(ctx, r, vc)
	if err != nil {
		return err
	}
	byName := map[string]*corev1.Pod{}
	for _, p := range pods {
		byName[p.Name] = p
	}
	keep := defaultScaleInWindow
	if a := vc.Spec.Autoscaling; a != nil && a.ScaleInWindowSeconds > 0 {
		keep = time.Duration(a.ScaleInWindowSeconds) * time.Second
	}
	key := client.ObjectKeyFromObject(vc)
	present := map[string]bool{}
	var wg sync.WaitGroup
	errs := make([]error, len(nodes))
	for i, n := range nodes {
		present[n.Name] = true
		pod := byName[n.Name]
		if pod == nil || pod.Status.PodIP == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.sampleNode(ctx, conn, vc, n, pod, keep)
		}()
	}
	wg.Wait()
	r.mu.Lock()
	if r.nodes == nil {
		r.nodes = map[types.NamespacedName]map[string]bool{}
	}
	gone := r.nodes[key]
	r.nodes[key] = present
	r.mu.Unlock()
	for n := range gone {
		if !present[n] {
			forgetNodeMetrics(vc.Namespace, vc.Name, n)
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *Autoscaler) sampleNode(ctx context.Context, conn *connector, vc *valkeyv1.ValkeyCluster, n *valkeyv1.ValkeyNode, pod *corev1.Pod, keep time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, sampleTimeout)
	defer cancel()
	node, err := conn.dial(ctx, n.Name, pod.Status.PodIP)
	if err != nil {
		return err
	}
	u, err := node.Usage(ctx)
	node.Close()
	if err != nil {
		return fmt.Errorf("sampling node %s: %w", n.Name, err)
	}
	cur := autoscale.Reading{
		Time: time.Now(), RunID: u.RunID, UsedMemory: u.UsedMemory, UsedMemoryPeak: u.UsedMemoryPeak,
		MaxMemory: u.MaxMemory, CPUSeconds: u.CPUSeconds, NetBytes: u.NetBytes,
	}
	r.mu.Lock()
	if r.readings == nil {
		r.readings = map[types.UID]autoscale.Reading{}
	}
	var prev *autoscale.Reading
	if p, ok := r.readings[pod.UID]; ok {
		prev = &p
	}
	r.readings[pod.UID] = cur
	r.mu.Unlock()

	limits := nodeLimits(n)
	s := autoscale.Compute(prev, cur, limits)
	recordNodeMetrics(vc.Namespace, vc.Name, n.Name, s)

	before := n.DeepCopy()
	u0 := n.Status.Utilisation
	if u0 == nil {
		u0 = &valkeyv1.NodeUtilisation{}
	}
	history := autoscale.Retain(samplesFromAPI(u0.Samples), s, keep, maxSamples)
	n.Status.Utilisation = &valkeyv1.NodeUtilisation{
		Samples:                samplesToAPI(history),
		PeakUsedMemoryBytes:    cur.UsedMemoryPeak,
		MemoryDenominatorBytes: autoscale.MemoryDenominator(cur.MaxMemory, limits),
		CPULimitMillis:         limits.CPUMillis,
	}
	if err := r.Status().Patch(ctx, n, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("recording utilisation of node %s: %w", n.Name, err)
	}
	return nil
}

// nodeLimits are the container limits the pod renders from the node's
// cpu and memory (requests equal limits).
func nodeLimits(n *valkeyv1.ValkeyNode) autoscale.Limits {
	var l autoscale.Limits
	if q, err := resource.ParseQuantity(n.Spec.Memory); err == nil && n.Spec.Memory != "" {
		l.MemoryBytes = q.Value()
	}
	if q, err := resource.ParseQuantity(n.Spec.CPU); err == nil && n.Spec.CPU != "" {
		l.CPUMillis = q.MilliValue()
	}
	return l
}

func samplesFromAPI(in []valkeyv1.UtilisationSample) []autoscale.Sample {
	out := make([]autoscale.Sample, len(in))
	for i, s := range in {
		out[i] = autoscale.Sample{Time: s.Time.Time, MemoryPercent: s.MemoryPercent, CPUPercent: s.CPUPercent,
			BandwidthMbps: s.BandwidthMbps, UsedMemoryBytes: s.UsedMemoryBytes}
	}
	return out
}

// samplesToAPI rounds figures to a tenth, which is what the decision and
// its messages resolve, so status does not carry float noise.
func samplesToAPI(in []autoscale.Sample) []valkeyv1.UtilisationSample {
	out := make([]valkeyv1.UtilisationSample, len(in))
	for i, s := range in {
		out[i] = valkeyv1.UtilisationSample{Time: metav1.NewTime(s.Time.Truncate(time.Millisecond)), MemoryPercent: round1(s.MemoryPercent),
			CPUPercent: round1(s.CPUPercent), BandwidthMbps: round1(s.BandwidthMbps), UsedMemoryBytes: s.UsedMemoryBytes}
	}
	return out
}

func round1(f *float64) *float64 {
	if f == nil {
		return nil
	}
	v := float64(int64(*f*10+0.5)) / 10
	return &v
}

// evaluate decides for a cluster with spec.autoscaling, and clears what an
// earlier decision left for one without.
func (r *Autoscaler) evaluate(ctx context.Context, key types.NamespacedName, nodes []*valkeyv1.ValkeyNode) error {
	var (
		decision autoscale.Decision
		notes    []autoscaleNote
	)
	err := updateClusterStatus(ctx, r.Client, r.APIReader, key, func(vc *valkeyv1.ValkeyCluster) bool {
		decision, notes = applyAutoscaling(vc, nodes, time.Now())
		return true
	})
	if err != nil {
		return fmt.Errorf("writing autoscaling status: %w", err)
	}
	vc := &valkeyv1.ValkeyCluster{}
	vc.Namespace, vc.Name = key.Namespace, key.Name
	if err := r.Get(ctx, key, vc); err != nil {
		return client.IgnoreNotFound(err)
	}
	for _, n := range notes {
		r.Recorder.Eventf(vc, nil, n.eventType, n.reason, "Autoscale", "%s", n.message)
	}
	if decision.Scales() {
		logf.FromContext(ctx).Info("autoscaling decision", "decision", decision.Direction, "from", decision.From, "to", decision.To, "why", decision.Message)
		autoscalingDecisions.WithLabelValues(key.Namespace, key.Name, string(decision.Direction)).Inc()
	}
	if vc.Spec.Autoscaling != nil && vc.Status.Autoscaling != nil {
		autoscalingDesiredShards.WithLabelValues(key.Namespace, key.Name).Set(float64(vc.Status.Autoscaling.DesiredShards))
	} else {
		forgetAutoscalingMetrics(key.Namespace, key.Name)
	}
	return nil
}

// autoscaleNote is an Event to emit once the status that caused it is written.
type autoscaleNote struct {
	eventType, reason, message string
}

// applyAutoscaling is the status side of one evaluation: the decision, the
// Autoscaling condition, and the Events they call for.
func applyAutoscaling(vc *valkeyv1.ValkeyCluster, nodes []*valkeyv1.ValkeyNode, now time.Time) (autoscale.Decision, []autoscaleNote) {
	a := vc.Spec.Autoscaling
	if a == nil {
		vc.Status.Autoscaling = nil
		meta.RemoveStatusCondition(&vc.Status.Conditions, valkeyv1.CondAutoscaling)
		return autoscale.Decision{}, nil
	}
	var notes []autoscaleNote
	st := vc.Status.Autoscaling
	if st == nil {
		st = &valkeyv1.AutoscalingStatus{DesiredShards: clampShards(vc.Spec.Shards, a), SpecShards: vc.Spec.Shards}
		vc.Status.Autoscaling = st
	}
	if st.SpecShards != vc.Spec.Shards {
		if vc.Spec.Shards != st.DesiredShards {
			notes = append(notes, autoscaleNote{corev1.EventTypeWarning, valkeyv1.ReasonSpecShardsIgnored, fmt.Sprintf(
				"spec.shards changed to %d while spec.autoscaling is set: ignored, the autoscaler keeps the cluster at %d shards (status.autoscaling.desiredShards); remove spec.autoscaling to set the shard count by hand",
				vc.Spec.Shards, st.DesiredShards)})
		}
		st.SpecShards = vc.Spec.Shards
	}

	in := autoscaleInput(vc, nodes, now)
	d := autoscale.Decide(in)
	if d.Scales() {
		at := metav1.NewTime(now)
		st.DesiredShards = int32(d.To)
		st.LastDecision = string(d.Direction)
		st.LastDecisionMessage = d.Message
		st.LastDecisionTime = &at
		if d.Direction == autoscale.ScaleOut {
			st.LastScaleOutTime = &at
		} else {
			st.LastScaleInTime = &at
		}
		st.HoldReason, st.HoldMessage = "", ""
		notes = append(notes, autoscaleNote{corev1.EventTypeNormal, string(d.Direction), d.Message})
	} else {
		if d.Reason == autoscale.ReasonHeadroom && st.HoldReason != autoscale.ReasonHeadroom {
			notes = append(notes, autoscaleNote{corev1.EventTypeWarning, valkeyv1.ReasonScaleInRefused, d.Message})
		}
		st.HoldReason, st.HoldMessage = d.Reason, d.Message
	}

	status, reason, msg := metav1.ConditionTrue, valkeyv1.ReasonAutoscalingActive, fmt.Sprintf(
		"the shard count follows status.autoscaling.desiredShards (%d, bounds %d-%d); spec.shards (%d) was the starting count and is ignored while spec.autoscaling is set",
		st.DesiredShards, a.MinShards, a.MaxShards, vc.Spec.Shards)
	if unusable := unusableTriggers(a, nodes); unusable != "" {
		status, reason, msg = metav1.ConditionFalse, valkeyv1.ReasonTriggerUnusable, unusable
		if !isConditionMessage(vc, valkeyv1.CondAutoscaling, msg) {
			notes = append(notes, autoscaleNote{corev1.EventTypeWarning, valkeyv1.ReasonTriggerUnusable, msg})
		}
	}
	setCondition(vc, valkeyv1.CondAutoscaling, status, reason, msg)
	return d, notes
}

// autoscaleInput gathers the decision's input from the cluster's status
// and its nodes' samples.
func autoscaleInput(vc *valkeyv1.ValkeyCluster, nodes []*valkeyv1.ValkeyNode, now time.Time) autoscale.Input {
	a := vc.Spec.Autoscaling
	st := vc.Status.Autoscaling
	policy := autoscale.Policy{
		MinShards: int(a.MinShards), MaxShards: int(a.MaxShards),
		ScaleOut:    autoscale.Thresholds{MemoryPercent: a.ScaleOut.MemoryPercent, CPUPercent: a.ScaleOut.CPUPercent, BandwidthMbps: a.ScaleOut.BandwidthMbps},
		Window:      window(a),
		OutCooldown: seconds(a.ScaleOutCooldownSeconds, 180),
		InCooldown:  seconds(a.ScaleInCooldownSeconds, 900),
	}
	if a.ScaleIn != nil {
		policy.ScaleIn = &autoscale.Thresholds{MemoryPercent: a.ScaleIn.MemoryPercent, CPUPercent: a.ScaleIn.CPUPercent}
	}
	in := autoscale.Input{Policy: policy, Current: int(st.DesiredShards), Now: now}
	if t := st.LastScaleOutTime; t != nil {
		in.LastScaleOut = t.Time
	}
	if t := st.LastScaleInTime; t != nil {
		in.LastScaleIn = t.Time
	}
	in.ConvergedSince, in.NotConvergedWhy = converged(vc, nodes)
	in.Converged = in.NotConvergedWhy == ""
	sorted := append([]*valkeyv1.ValkeyNode(nil), nodes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, n := range sorted {
		an := autoscale.Node{Name: n.Name, Primary: n.Status.Role == valkeyv1.RolePrimary}
		if u := n.Status.Utilisation; u != nil {
			an.Samples = samplesFromAPI(u.Samples)
			an.MemoryDenominatorBytes = u.MemoryDenominatorBytes
		}
		in.Nodes = append(in.Nodes, an)
	}
	return in
}

// seconds applies the API default where admission did not, as for an
// object stored before the field existed.
func seconds(v *int32, def int32) time.Duration {
	if v == nil {
		return time.Duration(def) * time.Second
	}
	return time.Duration(*v) * time.Second
}

// window is scaleInWindowSeconds; admission refuses less than 30, so 0 is
// an object that was never defaulted.
func window(a *valkeyv1.Autoscaling) time.Duration {
	if a.ScaleInWindowSeconds == 0 {
		return defaultScaleInWindow
	}
	return time.Duration(a.ScaleInWindowSeconds) * time.Second
}

// converged: Active, the planner reports nothing to do for the current
// spec, every node Active, every slot assigned and the shard count the
// autoscaler's target. Since is when the Progressing condition last
// turned False; why names the first unmet requirement, empty when all hold.
func converged(vc *valkeyv1.ValkeyCluster, nodes []*valkeyv1.ValkeyNode) (since time.Time, why string) {
	s := vc.Status
	switch {
	case s.State != valkeyv1.StateActive:
		return time.Time{}, fmt.Sprintf("state is %s", s.State)
	case s.SlotsAssigned != 16384:
		return time.Time{}, fmt.Sprintf("%d of 16384 slots assigned", s.SlotsAssigned)
	case s.Autoscaling == nil || s.Shards != s.Autoscaling.DesiredShards:
		want := int32(0)
		if s.Autoscaling != nil {
			want = s.Autoscaling.DesiredShards
		}
		return time.Time{}, fmt.Sprintf("%d shards observed, %d desired", s.Shards, want)
	}
	p := meta.FindStatusCondition(s.Conditions, valkeyv1.CondProgressing)
	switch {
	case p == nil:
		return time.Time{}, "no Progressing condition yet"
	case p.Status != metav1.ConditionFalse:
		return time.Time{}, fmt.Sprintf("Progressing is %s, %s: %s", p.Status, p.Reason, truncate(p.Message, 200))
	case p.ObservedGeneration != vc.Generation:
		return time.Time{}, fmt.Sprintf("generation %d not yet observed (Progressing is for %d)", vc.Generation, p.ObservedGeneration)
	}
	for _, n := range nodes {
		if n.Spec.Lifecycle != valkeyv1.LifecycleActive || !n.DeletionTimestamp.IsZero() {
			return time.Time{}, fmt.Sprintf("node %s is %s", n.Name, lifecycleOf(n))
		}
	}
	return p.LastTransitionTime.Time, ""
}

func lifecycleOf(n *valkeyv1.ValkeyNode) string {
	if !n.DeletionTimestamp.IsZero() {
		return "being deleted"
	}
	return string(n.Spec.Lifecycle)
}

// unusableTriggers names the configured thresholds a node cannot be
// measured against; empty when every one can.
func unusableTriggers(a *valkeyv1.Autoscaling, nodes []*valkeyv1.ValkeyNode) string {
	memory := a.ScaleOut.MemoryPercent != nil || (a.ScaleIn != nil && a.ScaleIn.MemoryPercent != nil)
	cpu := a.ScaleOut.CPUPercent != nil || (a.ScaleIn != nil && a.ScaleIn.CPUPercent != nil)
	var noMemory, noCPU []string
	for _, n := range nodes {
		u := n.Status.Utilisation
		if u == nil || len(u.Samples) == 0 {
			continue
		}
		if memory && u.MemoryDenominatorBytes == 0 {
			noMemory = append(noMemory, n.Name)
		}
		if cpu && u.CPULimitMillis == 0 {
			noCPU = append(noCPU, n.Name)
		}
	}
	sort.Strings(noMemory)
	sort.Strings(noCPU)
	msg := ""
	if len(noMemory) > 0 {
		msg = fmt.Sprintf("memoryPercent cannot be computed: %d node(s) %v have neither maxmemory nor a memory limit (set valkey.maxmemory or memory in the ValkeyConfig)", len(noMemory), noMemory)
	}
	if len(noCPU) > 0 {
		if msg != "" {
			msg += "; "
		}
		msg += fmt.Sprintf("cpuPercent cannot be computed: %d node(s) %v have no CPU limit (set cpu in the ValkeyConfig)", len(noCPU), noCPU)
	}
	if msg != "" {
		msg += "; those triggers are off, a scale-in they are part of is blocked, the other triggers still apply"
	}
	return msg
}

// clampShards bounds a shard count by the autoscaling limits.
func clampShards(n int32, a *valkeyv1.Autoscaling) int32 {
	return max(a.MinShards, min(a.MaxShards, n))
}

// shardTarget is the shard count the topology engine converges to:
// status.autoscaling.desiredShards while spec.autoscaling is set (bounded,
// in case the bounds changed since), spec.shards otherwise, including
// after autoscaling is removed.
func shardTarget(vc *valkeyv1.ValkeyCluster) int32 {
	a := vc.Spec.Autoscaling
	if a == nil {
		return vc.Spec.Shards
	}
	if st := vc.Status.Autoscaling; st != nil && st.DesiredShards > 0 {
		return clampShards(st.DesiredShards, a)
	}
	return clampShards(vc.Spec.Shards, a)
}

// ignoreNewSamples passes every ValkeyNode change but a new sample, so
// sampling every node does not wake the cluster controller for each one.
func ignoreNewSamples() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*valkeyv1.ValkeyNode)
			n, ok2 := e.ObjectNew.(*valkeyv1.ValkeyNode)
			if !ok1 || !ok2 {
				return true
			}
			o, n = o.DeepCopy(), n.DeepCopy()
			o.Status.Utilisation, n.Status.Utilisation = nil, nil
			o.ResourceVersion, n.ResourceVersion = "", ""
			o.ManagedFields, n.ManagedFields = nil, nil
			return !equality.Semantic.DeepEqual(o, n)
		},
	}
}
