package autoscaler

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/autoscale"
)

func fp(v float64) *float64 { return &v }

var autoscaleNow = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// autoscaledCluster is a converged one-shard cluster scaling out at 80%
// memory, with one primary whose latest sample is memory.
func autoscaledCluster(memory float64) (*valkeyv1.ValkeyCluster, []*valkeyv1.ValkeyNode) {
	vc := &valkeyv1.ValkeyCluster{}
	vc.Name, vc.Namespace, vc.Generation = "my-cluster", "ns", 3
	vc.Spec.Shards = 1
	vc.Spec.Autoscaling = &valkeyv1.Autoscaling{
		MinShards: 1, MaxShards: 3,
		ScaleOut:             valkeyv1.ScaleOutTriggers{MemoryPercent: fp(80)},
		ScaleInWindowSeconds: 300, ScaleOutCooldownSeconds: ptr.To[int32](180), ScaleInCooldownSeconds: ptr.To[int32](900),
	}
	vc.Status.State = valkeyv1.StateActive
	vc.Status.Shards = 1
	vc.Status.SlotsAssigned = 16384
	vc.Status.Conditions = []metav1.Condition{{Type: valkeyv1.CondProgressing, Status: metav1.ConditionFalse, Reason: valkeyv1.ReasonConverged,
		ObservedGeneration: 3, LastTransitionTime: metav1.NewTime(autoscaleNow.Add(-time.Hour))}}
	n := &valkeyv1.ValkeyNode{}
	n.Name = "my-cluster-a1b2c"
	n.Spec.Lifecycle = valkeyv1.LifecycleActive
	n.Status.Role = valkeyv1.RolePrimary
	n.Status.Utilisation = &valkeyv1.NodeUtilisation{MemoryDenominatorBytes: 100 << 20, Samples: []valkeyv1.UtilisationSample{
		{Time: metav1.NewTime(autoscaleNow.Add(-30 * time.Second)), MemoryPercent: fp(50)},
		{Time: metav1.NewTime(autoscaleNow), MemoryPercent: fp(memory)},
	}}
	return vc, []*valkeyv1.ValkeyNode{n}
}

func TestApplyAutoscalingScalesOutWithEvent(t *testing.T) {
	vc, nodes := autoscaledCluster(84.2)
	d, notes := applyAutoscaling(vc, nodes, autoscaleNow)
	const msg = "1 -> 2 shards: node my-cluster-a1b2c memory 84.2% >= 80%"
	if !d.Scales() || d.To != 2 {
		t.Fatalf("decision %+v, want a scale-out to 2", d)
	}
	st := vc.Status.Autoscaling
	if st.DesiredShards != 2 || st.LastDecision != valkeyv1.ReasonScaleOut || st.LastDecisionMessage != msg ||
		st.LastDecisionTime == nil || !st.LastScaleOutTime.Time.Equal(autoscaleNow) {
		t.Fatalf("status %+v", st)
	}
	if len(notes) != 1 || notes[0].reason != valkeyv1.ReasonScaleOut || notes[0].message != msg || notes[0].eventType != "Normal" {
		t.Fatalf("events %+v, want one ScaleOut %q", notes, msg)
	}
	if got := autoscale.ShardTarget(vc); got != 2 {
		t.Fatalf("ShardTarget = %d, want the autoscaler's 2", got)
	}
	c := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondAutoscaling)
	if c == nil || c.Reason != valkeyv1.ReasonAutoscalingActive || !strings.Contains(c.Message, "spec.shards (1) was the starting count and is ignored") {
		t.Fatalf("Autoscaling condition %+v", c)
	}
}

func TestApplyAutoscalingHoldsUntilConverged(t *testing.T) {
	vc, nodes := autoscaledCluster(95)
	nodes[0].Spec.Lifecycle = valkeyv1.LifecycleJoining
	d, notes := applyAutoscaling(vc, nodes, autoscaleNow)
	if d.Scales() || len(notes) != 0 || vc.Status.Autoscaling.HoldReason != "NotConverged" || vc.Status.Autoscaling.DesiredShards != 1 {
		t.Fatalf("decision %+v, notes %+v, status %+v: want a hold while a node joins", d, notes, vc.Status.Autoscaling)
	}
	vc, nodes = autoscaledCluster(95)
	vc.Status.Conditions[0].ObservedGeneration = 2
	if d, _ := applyAutoscaling(vc, nodes, autoscaleNow); d.Scales() {
		t.Fatalf("decided %+v on a status that predates the spec", d)
	}
}

func TestApplyAutoscalingReportsIgnoredSpecShards(t *testing.T) {
	vc, nodes := autoscaledCluster(50)
	applyAutoscaling(vc, nodes, autoscaleNow)
	vc.Spec.Shards = 3 // kubectl scale --replicas=3
	_, notes := applyAutoscaling(vc, nodes, autoscaleNow)
	if len(notes) != 1 || notes[0].reason != valkeyv1.ReasonSpecShardsIgnored || !strings.Contains(notes[0].message, "spec.shards changed to 3") {
		t.Fatalf("events %+v, want SpecShardsIgnored", notes)
	}
	if got := autoscale.ShardTarget(vc); got != 1 {
		t.Fatalf("ShardTarget = %d, want the autoscaler's 1", got)
	}
	if _, notes := applyAutoscaling(vc, nodes, autoscaleNow); len(notes) != 0 {
		t.Fatalf("reported again: %+v", notes)
	}
}

func TestApplyAutoscalingReportsUnusableTriggerOnce(t *testing.T) {
	vc, nodes := autoscaledCluster(50)
	vc.Spec.Autoscaling.ScaleOut.CPUPercent = fp(70)
	_, notes := applyAutoscaling(vc, nodes, autoscaleNow)
	c := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondAutoscaling)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != valkeyv1.ReasonTriggerUnusable ||
		!strings.Contains(c.Message, "cpuPercent cannot be computed: 1 node(s) [my-cluster-a1b2c] have no CPU limit") {
		t.Fatalf("Autoscaling condition %+v", c)
	}
	if len(notes) != 1 || notes[0].reason != valkeyv1.ReasonTriggerUnusable {
		t.Fatalf("events %+v, want one TriggerUnusable", notes)
	}
	if _, notes := applyAutoscaling(vc, nodes, autoscaleNow); len(notes) != 0 {
		t.Fatalf("reported twice: %+v", notes)
	}
	nodes[0].Status.Utilisation.CPULimitMillis = 500
	applyAutoscaling(vc, nodes, autoscaleNow)
	if c := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondAutoscaling); c.Reason != valkeyv1.ReasonAutoscalingActive {
		t.Fatalf("with a CPU limit the condition is %+v", c)
	}
}

func TestApplyAutoscalingRefusesScaleInWithoutHeadroom(t *testing.T) {
	vc, nodes := autoscaledCluster(10)
	vc.Spec.Autoscaling.ScaleIn = &valkeyv1.ScaleInTriggers{MemoryPercent: fp(30)}
	vc.Status.Shards = 2
	vc.Status.Autoscaling = &valkeyv1.AutoscalingStatus{DesiredShards: 2, SpecShards: 1}
	var samples []valkeyv1.UtilisationSample
	for i := 10; i >= 0; i-- {
		samples = append(samples, valkeyv1.UtilisationSample{Time: metav1.NewTime(autoscaleNow.Add(-time.Duration(i) * 30 * time.Second)),
			MemoryPercent: fp(20), UsedMemoryBytes: 45 << 20})
	}
	nodes[0].Status.Utilisation.Samples = samples
	second := nodes[0].DeepCopy()
	second.Name = "my-cluster-f6e5d"
	nodes = append(nodes, second)
	d, notes := applyAutoscaling(vc, nodes, autoscaleNow)
	if d.Scales() || vc.Status.Autoscaling.HoldReason != "InsufficientHeadroom" {
		t.Fatalf("decision %+v, status %+v", d, vc.Status.Autoscaling)
	}
	if len(notes) != 1 || notes[0].reason != valkeyv1.ReasonScaleInRefused || !strings.Contains(notes[0].message, "would hold 90.0 MiB of 100.0 MiB") {
		t.Fatalf("events %+v", notes)
	}
	if _, notes := applyAutoscaling(vc, nodes, autoscaleNow); len(notes) != 0 {
		t.Fatalf("refusal reported twice: %+v", notes)
	}
	for _, n := range nodes {
		for i := range n.Status.Utilisation.Samples {
			n.Status.Utilisation.Samples[i].UsedMemoryBytes = 10 << 20
		}
	}
	if d, notes := applyAutoscaling(vc, nodes, autoscaleNow); d.To != 1 || len(notes) != 1 || notes[0].reason != valkeyv1.ReasonScaleIn {
		t.Fatalf("with headroom: decision %+v, events %+v", d, notes)
	}
}

func TestAutoscalingRemovedReturnsToSpecShards(t *testing.T) {
	vc, nodes := autoscaledCluster(84.2)
	applyAutoscaling(vc, nodes, autoscaleNow)
	vc.Spec.Autoscaling = nil
	applyAutoscaling(vc, nodes, autoscaleNow)
	if vc.Status.Autoscaling != nil || meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondAutoscaling) != nil {
		t.Fatalf("status %+v, conditions %v: want autoscaling cleared", vc.Status.Autoscaling, vc.Status.Conditions)
	}
	if got := autoscale.ShardTarget(vc); got != 1 {
		t.Fatalf("ShardTarget = %d, want spec.shards 1", got)
	}
}

func TestIgnoreNewSamples(t *testing.T) {
	old := &valkeyv1.ValkeyNode{}
	old.Name, old.ResourceVersion = "n", "1"
	sampled := old.DeepCopy()
	sampled.ResourceVersion = "2"
	sampled.Status.Utilisation = &valkeyv1.NodeUtilisation{PeakUsedMemoryBytes: 5}
	roled := sampled.DeepCopy()
	roled.Status.Role = valkeyv1.RolePrimary
	p := IgnoreNewSamples()
	if p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: sampled}) {
		t.Fatal("a new sample woke the cluster controller")
	}
	if !p.Update(event.UpdateEvent{ObjectOld: sampled, ObjectNew: roled}) {
		t.Fatal("a role change did not wake the cluster controller")
	}
}

func TestSamplesRoundTrip(t *testing.T) {
	in := []valkeyv1.UtilisationSample{{Time: metav1.NewTime(autoscaleNow), MemoryPercent: fp(84.24), UsedMemoryBytes: 7}}
	out := samplesToAPI(samplesFromAPI(in))
	if *out[0].MemoryPercent != 84.2 || out[0].CPUPercent != nil || out[0].UsedMemoryBytes != 7 {
		t.Fatalf("round trip %+v", out[0])
	}
}
