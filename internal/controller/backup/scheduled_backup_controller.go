package backup

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/backup"
)

// pruneRetryInterval is how soon a schedule whose pruning failed tries
// again, unless a due time comes first.
const pruneRetryInterval = 30 * time.Second

// SetupScheduled registers the ValkeyScheduledBackup controller.
func SetupScheduled(mgr ctrl.Manager) error {
	r := &scheduledBackupReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), now: time.Now}
	if err := ctrl.NewControllerManagedBy(mgr).
		// Not on its own status writes, which change nothing it decides
		// from: the due times come from RequeueAfter.
		For(&valkeyv1.ValkeyScheduledBackup{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A backup completing or failing may put an older one out of
		// retention.
		Owns(&valkeyv1.ValkeyBackup{}).
		Named("valkeyscheduledbackup").
		Complete(r); err != nil {
		return fmt.Errorf("setting up scheduled backup controller: %w", err)
	}
	return nil
}

func (r *scheduledBackupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var sb valkeyv1.ValkeyScheduledBackup
	if err := r.Get(ctx, req.NamespacedName, &sb); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !sb.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	before := sb.Status.DeepCopy()
	now := r.now()
	owned, err := r.ownedBackups(ctx, &sb)
	if err != nil {
		return ctrl.Result{}, err
	}

	var wake []time.Time
	ret := retentionOf(sb.Spec.Retention)
	kept, pruneErr := r.prune(ctx, &sb, owned, ret, now)
	if pruneErr != nil {
		setScheduleCondition(&sb, valkeyv1.CondRetentionApplied, metav1.ConditionFalse, valkeyv1.ReasonPruneFailed, pruneErr.Error())
		wake = append(wake, now.Add(pruneRetryInterval))
	} else {
		setScheduleCondition(&sb, valkeyv1.CondRetentionApplied, metav1.ConditionTrue, valkeyv1.ReasonWithinRetention, ret.Message())
	}
	if at, ok := ret.NextExpiry(keptOf(kept), now); ok {
		wake = append(wake, at)
	}

	sched, err := backup.ParseSchedule(sb.Spec.Schedule)
	switch {
	case err != nil:
		setScheduleCondition(&sb, valkeyv1.CondScheduleValid, metav1.ConditionFalse, valkeyv1.ReasonScheduleInvalid, err.Error())
		sb.Status.NextScheduleTime = nil
	case sb.Spec.Suspend:
		setScheduleCondition(&sb, valkeyv1.CondScheduleValid, metav1.ConditionTrue, valkeyv1.ReasonScheduleParsed, "suspended: no backup is created")
		sb.Status.NextScheduleTime = nil
	default:
		setScheduleCondition(&sb, valkeyv1.CondScheduleValid, metav1.ConditionTrue, valkeyv1.ReasonScheduleParsed, "backups are created at each due time (UTC)")
		if err := r.takeDue(ctx, &sb, sched, now); err != nil {
			return ctrl.Result{}, err
		}
		next := sched.Next(now)
		sb.Status.NextScheduleTime = &metav1.Time{Time: next}
		wake = append(wake, next)
	}
	sb.Status.LastSuccessfulBackup = newestCompleted(kept)

	if !equality.Semantic.DeepEqual(before, &sb.Status) {
		if err := r.Status().Update(ctx, &sb); err != nil {
			return ctrl.Result{}, fmt.Errorf("writing the status of ValkeyScheduledBackup %s: %w", sb.Name, err)
		}
	}
	return ctrl.Result{RequeueAfter: untilFirst(wake, now)}, nil
}

// takeDue creates the backup of the latest due time since the last one,
// if one has passed. Its name comes from the due time, so a backup
// created by a pass whose status write was lost is found, not repeated.
func (r *scheduledBackupReconciler) takeDue(ctx context.Context, sb *valkeyv1.ValkeyScheduledBackup, sched backup.Schedule, now time.Time) error {
	after := sb.CreationTimestamp.Time
	if sb.Status.LastScheduleTime != nil {
		after = sb.Status.LastScheduleTime.Time
	}
	due, ok := sched.LastDue(after, now)
	if !ok {
		return nil
	}
	b := scheduledBackup(sb, due)
	if err := r.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ValkeyBackup %s of schedule %s: %w", b.Name, sb.Name, err)
	}
	sb.Status.LastScheduleTime = &metav1.Time{Time: due}
	sb.Status.LastBackupName = b.Name
	return nil
}

// scheduledBackup is the ValkeyBackup a schedule takes at a due time. It
// is owned by the schedule, but does not block the schedule's foreground
// deletion: nothing needs to wait for a backup object to go.
func scheduledBackup(sb *valkeyv1.ValkeyScheduledBackup, due time.Time) *valkeyv1.ValkeyBackup {
	gvk := valkeyv1.GroupVersion.WithKind("ValkeyScheduledBackup")
	return &valkeyv1.ValkeyBackup{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: sb.Namespace,
			Name:      backup.ScheduledName(sb.Name, due),
			Labels: map[string]string{
				valkeyv1.LabelScheduledBackup: sb.Name,
				valkeyv1.LabelManagedBy:       valkeyv1.LabelManagedByValue,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: sb.Name, UID: sb.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false),
			}},
		},
		Spec: valkeyv1.ValkeyBackupSpec{Cluster: sb.Spec.Cluster, Destination: sb.Spec.Destination},
	}
}

// ownedBackups are the schedule's backups: labelled with its name and
// controlled by it, so a schedule deleted and created again under the
// same name does not prune its predecessor's.
func (r *scheduledBackupReconciler) ownedBackups(ctx context.Context, sb *valkeyv1.ValkeyScheduledBackup) ([]valkeyv1.ValkeyBackup, error) {
	var list valkeyv1.ValkeyBackupList
	if err := r.List(ctx, &list, client.InNamespace(sb.Namespace), client.MatchingLabels{valkeyv1.LabelScheduledBackup: sb.Name}); err != nil {
		return nil, fmt.Errorf("listing the backups of schedule %s: %w", sb.Name, err)
	}
	var out []valkeyv1.ValkeyBackup
	for _, b := range list.Items {
		if metav1.IsControlledBy(&b, sb) {
			out = append(out, b)
		}
	}
	return out, nil
}

func retentionOf(r *valkeyv1.BackupRetention) backup.Retention {
	var out backup.Retention
	if r == nil {
		return out
	}
	if r.KeepLast != nil {
		out.KeepLast = int(*r.KeepLast)
	}
	if r.MaxAge != nil {
		out.MaxAge = r.MaxAge.Duration
	}
	return out
}

// newestCompleted names the newest Completed backup, which retention
// never prunes.
func newestCompleted(backups []valkeyv1.ValkeyBackup) string {
	var out *valkeyv1.ValkeyBackup
	for i := range backups {
		b := &backups[i]
		if b.Status.Phase != valkeyv1.BackupCompleted {
			continue
		}
		if out == nil || b.CreationTimestamp.After(out.CreationTimestamp.Time) ||
			(b.CreationTimestamp.Equal(&out.CreationTimestamp) && b.Name > out.Name) {
			out = b
		}
	}
	if out == nil {
		return ""
	}
	return out.Name
}

func setScheduleCondition(sb *valkeyv1.ValkeyScheduledBackup, typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&sb.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: sb.Generation,
	})
}

// untilFirst is how long until the earliest of the times, zero (no
// requeue) when there is none. A time already past wakes at once.
func untilFirst(times []time.Time, now time.Time) time.Duration {
	var first time.Time
	for _, t := range times {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	if first.IsZero() {
		return 0
	}
	return max(first.Sub(now), time.Millisecond)
}
