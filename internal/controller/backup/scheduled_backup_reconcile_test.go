package backup

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/apischeme"
)

// A schedule's passes, on a clock the test moves: nothing before the first
// due time, one backup for four due times missed while the operator was
// down, none more on the next pass, and none more when the status that
// recorded it was lost (the name is the due time's). Each pass sleeps
// until the next due time.
func TestScheduledBackupPasses(t *testing.T) {
	created := time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC)
	c, sb := scheduleFixture(t, "*/5 * * * *", false, created)
	var now time.Time
	r := &scheduledBackupReconciler{Client: c, APIReader: c, now: func() time.Time { return now }}
	pass := func(at time.Time) (ctrl.Result, *valkeyv1.ValkeyScheduledBackup, []string) {
		t.Helper()
		now = at
		res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sb)})
		if err != nil {
			t.Fatalf("pass at %s: %v", at, err)
		}
		var got valkeyv1.ValkeyScheduledBackup
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(sb), &got); err != nil {
			t.Fatal(err)
		}
		var list valkeyv1.ValkeyBackupList
		if err := c.List(context.Background(), &list); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, b := range list.Items {
			names = append(names, b.Name)
		}
		return res, &got, names
	}

	res, got, names := pass(created.Add(30 * time.Second))
	if len(names) != 0 || res.RequeueAfter != 4*time.Minute+30*time.Second || !got.Status.NextScheduleTime.Equal(&metav1.Time{Time: created.Add(5 * time.Minute)}) {
		t.Fatalf("before the first due time: backups %v, requeue %s, status %+v", names, res.RequeueAfter, got.Status)
	}

	down := created.Add(23*time.Minute + 10*time.Second)
	res, got, names = pass(down)
	want := "nightly-20261205t042000z"
	if len(names) != 1 || names[0] != want || got.Status.LastBackupName != want ||
		!got.Status.LastScheduleTime.Equal(&metav1.Time{Time: created.Add(20 * time.Minute)}) || res.RequeueAfter != time.Minute+50*time.Second {
		t.Fatalf("after four missed due times: backups %v, requeue %s, status %+v", names, res.RequeueAfter, got.Status)
	}

	if _, _, names = pass(down.Add(time.Second)); len(names) != 1 {
		t.Fatalf("the next pass created more: %v", names)
	}

	got.Status.LastScheduleTime, got.Status.LastBackupName = nil, ""
	if err := c.Status().Update(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	if _, got, names = pass(down.Add(2 * time.Second)); len(names) != 1 || got.Status.LastBackupName != want {
		t.Fatalf("with the status lost: backups %v, status %+v", names, got.Status)
	}
}

// A bad schedule and a suspended one create nothing and do not wake up on
// their own; a bad one says why.
func TestScheduledBackupCreatesNothing(t *testing.T) {
	created := time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC)
	cases := []struct {
		name     string
		schedule string
		suspend  bool
		status   metav1.ConditionStatus
		reason   string
		message  string
	}{
		{name: "bad schedule", schedule: "*/5 * * 13 *", status: metav1.ConditionFalse, reason: valkeyv1.ReasonScheduleInvalid, message: `field month "13"`},
		{name: "suspended", schedule: "*/5 * * * *", suspend: true, status: metav1.ConditionTrue, reason: valkeyv1.ReasonScheduleParsed, message: "suspended"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, sb := scheduleFixture(t, tc.schedule, tc.suspend, created)
			r := &scheduledBackupReconciler{Client: c, APIReader: c, now: func() time.Time { return created.Add(time.Hour) }}
			res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sb)})
			if err != nil {
				t.Fatal(err)
			}
			var got valkeyv1.ValkeyScheduledBackup
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(sb), &got); err != nil {
				t.Fatal(err)
			}
			var list valkeyv1.ValkeyBackupList
			if err := c.List(context.Background(), &list); err != nil {
				t.Fatal(err)
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, valkeyv1.CondScheduleValid)
			if len(list.Items) != 0 || res.RequeueAfter != 0 || got.Status.NextScheduleTime != nil || cond == nil ||
				cond.Status != tc.status || cond.Reason != tc.reason || !strings.Contains(cond.Message, tc.message) {
				t.Fatalf("%d backups, requeue %s, status %+v", len(list.Items), res.RequeueAfter, got.Status)
			}
		})
	}
}

func scheduleFixture(t *testing.T, schedule string, suspend bool, created time.Time) (client.Client, *valkeyv1.ValkeyScheduledBackup) {
	t.Helper()
	scheme, err := apischeme.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	sb := &valkeyv1.ValkeyScheduledBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nightly", UID: "sched-uid", CreationTimestamp: metav1.Time{Time: created}},
		Spec: valkeyv1.ValkeyScheduledBackupSpec{Cluster: "orders", Schedule: schedule, Suspend: suspend,
			Destination: valkeyv1.BackupDestination{Bucket: "bk", Endpoint: "https://s3.example.com", CredentialsSecretRef: "c"}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(sb).WithStatusSubresource(sb, &valkeyv1.ValkeyBackup{}).Build()
	return c, sb
}
