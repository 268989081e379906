package backup

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// A scheduled backup copies the schedule's cluster and destination, is
// labelled and controlled by it, and does not ask for the update on the
// schedule's finalizers that a blocking owner reference needs.
func TestScheduledBackupObject(t *testing.T) {
	sb := &valkeyv1.ValkeyScheduledBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nightly", UID: "sched-uid"},
		Spec: valkeyv1.ValkeyScheduledBackupSpec{Cluster: "orders", Schedule: "15 4 * * *",
			Destination: valkeyv1.BackupDestination{Bucket: "bk", Endpoint: "https://s3.example.com", CredentialsSecretRef: "c"}},
	}
	b := scheduledBackup(sb, time.Date(2026, 12, 5, 4, 15, 0, 0, time.UTC))
	if b.Name != "nightly-20261205t041500z" || b.Namespace != "ns" || b.Labels[valkeyv1.LabelScheduledBackup] != "nightly" {
		t.Fatalf("metadata %+v", b.ObjectMeta)
	}
	if b.Spec.Cluster != "orders" || b.Spec.Destination != sb.Spec.Destination {
		t.Fatalf("spec %+v", b.Spec)
	}
	if !metav1.IsControlledBy(b, sb) {
		t.Fatalf("owner references %+v", b.OwnerReferences)
	}
	ref := b.OwnerReferences[0]
	if ref.Kind != "ValkeyScheduledBackup" || ref.APIVersion != valkeyv1.GroupVersion.String() || ref.BlockOwnerDeletion == nil || *ref.BlockOwnerDeletion {
		t.Fatalf("owner reference %+v", ref)
	}
}

func TestUntilFirst(t *testing.T) {
	now := time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		times []time.Time
		want  time.Duration
	}{
		{name: "nothing to wait for", want: 0},
		{name: "the earliest", times: []time.Time{now.Add(time.Hour), now.Add(30 * time.Second)}, want: 30 * time.Second},
		{name: "a time past wakes at once, not never", times: []time.Time{now.Add(-time.Second)}, want: time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := untilFirst(tc.times, now); got != tc.want {
				t.Fatalf("untilFirst = %s, want %s", got, tc.want)
			}
		})
	}
}
