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
)

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

func (r *autoscaler) sampleNode(ctx context.Context, conn *nodeconn.Connector, vc *valkeyv1.ValkeyCluster, n *valkeyv1.ValkeyNode, pod *corev1.Pod, keep time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, sampleTimeout)
	defer cancel()
	node, err := conn.Dial(ctx, n.Name, pod.Status.PodIP)
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
