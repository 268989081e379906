package autoscaler

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/autoscale"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// keepHistories replaces the cluster's kept histories with this pass's,
// keeping those of nodes not sampled this time (no pod), so only deleted
// nodes' histories go. The caller holds r.mu.
func (r *autoscaler) keepHistories(key types.NamespacedName, nodes []*valkeyv1.ValkeyNode, kept map[types.UID][]autoscale.Sample) {
	if r.histories == nil {
		r.histories = map[types.NamespacedName]map[types.UID][]autoscale.Sample{}
	}
	for _, n := range nodes {
		if _, ok := kept[n.UID]; !ok {
			if h, ok := r.histories[key][n.UID]; ok {
				kept[n.UID] = h
			}
		}
	}
	r.histories[key] = kept
}

// sample reads every running node once, concurrently, and writes each
// node's new sample into its status.
func (r *autoscaler) sample(ctx context.Context, vc *valkeyv1.ValkeyCluster, nodes []*valkeyv1.ValkeyNode) error {
	conn, err := nodeconn.ForCluster(ctx, r, vc, r.Options.ClusterDomain, r.Dialer, r.pool)
	if err != nil {
		return err
	}
	pods, err := nodeconn.RunningPods(ctx, r, vc)
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
	kept := map[types.UID][]autoscale.Sample{}
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
			errs[i] = r.sampleNode(ctx, conn, vc, n, pod, keep, kept)
		}()
	}
	wg.Wait()
	r.mu.Lock()
	if r.nodes == nil {
		r.nodes = map[types.NamespacedName]map[string]bool{}
	}
	gone := r.nodes[key]
	r.nodes[key] = present
	r.keepHistories(key, nodes, kept)
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

// sampleNode turns the node's recent look into a sample, keeps it in the
// node's history and writes the history when needsWrite says so.
func (r *autoscaler) sampleNode(ctx context.Context, conn *nodeconn.Connector, vc *valkeyv1.ValkeyCluster, n *valkeyv1.ValkeyNode,
	pod *corev1.Pod, keep time.Duration, kept map[types.UID][]autoscale.Sample) error {
	ctx, cancel := context.WithTimeout(ctx, sampleTimeout)
	defer cancel()
	// The cluster controller's observation, when it looked within the
	// interval and a half, answered for this tick: one INFO per node. A
	// look taken here wakes the cluster controller when it finds the
	// node changed (looks.Store).
	look, err := r.Looks.Recent(ctx, client.ObjectKeyFromObject(vc), pod, r.interval()*3/2, r.lastReading(pod.UID), func(ctx context.Context) (*valkey.Node, error) {
		return conn.Dial(ctx, n.Name, pod.Status.PodIP)
	})
	if err != nil {
		return fmt.Errorf("sampling node %s: %w", n.Name, err)
	}
	u, err := look.Usage()
	if err != nil {
		return fmt.Errorf("sampling node %s: %w", n.Name, err)
	}
	// Rates divide by the time between the node's answers, not between
	// samples: a look may be older than the tick that uses it.
	cur := autoscale.Reading{
		Time: look.Time, RunID: u.RunID, UsedMemory: u.UsedMemory, UsedMemoryPeak: u.UsedMemoryPeak,
		MaxMemory: u.MaxMemory, CPUSeconds: u.CPUSeconds, NetBytes: u.NetBytes,
	}
	prev, fresh := r.remember(pod.UID, cur)
	if !fresh {
		// The look was sampled already (a requeue within its freshness).
		return nil
	}
	limits := nodeLimits(n)
	s := autoscale.Compute(prev, cur, limits)
	recordNodeMetrics(vc.Namespace, vc.Name, n.Name, s)

	r.mu.Lock()
	base := historyBase(r.histories[client.ObjectKeyFromObject(vc)][n.UID], n.Status.Utilisation)
	r.mu.Unlock()
	history := autoscale.Retain(base, s, keep, maxSamples)
	r.mu.Lock()
	kept[n.UID] = history
	r.mu.Unlock()
	next := &valkeyv1.NodeUtilisation{
		Samples:                samplesToAPI(history),
		PeakUsedMemoryBytes:    cur.UsedMemoryPeak,
		MemoryDenominatorBytes: autoscale.MemoryDenominator(cur.MaxMemory, limits),
		CPULimitMillis:         limits.CPUMillis,
	}
	if !needsWrite(vc.Spec.Autoscaling != nil, n.Status.Utilisation, next, look.Time) {
		return nil
	}
	before := n.DeepCopy()
	n.Status.Utilisation = next
	if err := r.Status().Patch(ctx, n, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("recording utilisation of node %s: %w", n.Name, err)
	}
	return nil
}

// lastReading is when the pod's last reading was taken; zero for none.
func (r *autoscaler) lastReading(pod types.UID) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.readings[pod].Time
}

// remember keeps cur as the pod's last reading and returns the one before
// it; fresh is false when cur is that same reading again.
func (r *autoscaler) remember(pod types.UID, cur autoscale.Reading) (prev *autoscale.Reading, fresh bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.readings == nil {
		r.readings = map[types.UID]autoscale.Reading{}
	}
	p, ok := r.readings[pod]
	if ok && p.RunID == cur.RunID && !cur.Time.After(p.Time) {
		return nil, false
	}
	r.readings[pod] = cur
	if !ok {
		return nil, true
	}
	return &p, true
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
