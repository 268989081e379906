package autoscaler

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/autoscale"
)

func TestNeedsWrite(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	written := func(newest time.Duration) *valkeyv1.NodeUtilisation {
		return &valkeyv1.NodeUtilisation{
			Samples:             []valkeyv1.UtilisationSample{{Time: metav1.NewTime(now.Add(-newest - time.Minute))}, {Time: metav1.NewTime(now.Add(-newest))}},
			PeakUsedMemoryBytes: 100, MemoryDenominatorBytes: 1000, CPULimitMillis: 500,
		}
	}
	same := written(0)
	for _, tc := range []struct {
		name        string
		autoscaling bool
		written     *valkeyv1.NodeUtilisation
		next        *valkeyv1.NodeUtilisation
		want        bool
	}{
		{name: "nothing written yet", written: nil, next: same, want: true},
		{name: "no sample written yet", written: &valkeyv1.NodeUtilisation{PeakUsedMemoryBytes: 100, MemoryDenominatorBytes: 1000, CPULimitMillis: 500}, next: same, want: true},
		{name: "idle, written a minute ago", written: written(time.Minute), next: same},
		{name: "idle, written just under five minutes ago", written: written(writeEvery - time.Second), next: same},
		{name: "idle, written five minutes ago", written: written(writeEvery), next: same, want: true},
		{name: "autoscaling reads every sample", autoscaling: true, written: written(time.Minute), next: same, want: true},
		{name: "a new peak", written: written(time.Minute), next: &valkeyv1.NodeUtilisation{PeakUsedMemoryBytes: 200, MemoryDenominatorBytes: 1000, CPULimitMillis: 500}, want: true},
		{name: "a new denominator", written: written(time.Minute), next: &valkeyv1.NodeUtilisation{PeakUsedMemoryBytes: 100, MemoryDenominatorBytes: 2000, CPULimitMillis: 500}, want: true},
		{name: "a new CPU limit", written: written(time.Minute), next: &valkeyv1.NodeUtilisation{PeakUsedMemoryBytes: 100, MemoryDenominatorBytes: 1000, CPULimitMillis: 1000}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := needsWrite(tc.autoscaling, tc.written, tc.next, now); got != tc.want {
				t.Fatalf("needsWrite = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHistoryBase(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	status := &valkeyv1.NodeUtilisation{Samples: []valkeyv1.UtilisationSample{{Time: metav1.NewTime(now.Add(-time.Minute))}}}
	kept := []autoscale.Sample{{Time: now.Add(-time.Minute)}, {Time: now.Add(-30 * time.Second)}}
	for _, tc := range []struct {
		name    string
		kept    []autoscale.Sample
		written *valkeyv1.NodeUtilisation
		want    int
	}{
		{name: "the kept samples, some not written", kept: kept, written: status, want: 2},
		{name: "nothing kept (a restart)", kept: nil, written: status, want: 1},
		{name: "status newer (written while another process led)", kept: kept[:1], written: &valkeyv1.NodeUtilisation{Samples: []valkeyv1.UtilisationSample{
			{Time: metav1.NewTime(now.Add(-time.Minute))}, {Time: metav1.NewTime(now.Add(-30 * time.Second))}, {Time: metav1.NewTime(now)}}}, want: 3},
		{name: "nothing written", kept: kept, written: nil, want: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := historyBase(tc.kept, tc.written); len(got) != tc.want {
				t.Fatalf("historyBase has %d samples, want %d", len(got), tc.want)
			}
		})
	}
}
