package backup

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/backup"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/controller/options"
)

// backupWaitInterval is how often a backup waiting for its cluster to be
// Active looks again besides the wake its cluster's state change sends.
const backupWaitInterval = 10 * time.Second

// backupWorkers is how many backups run at once; each holds its worker
// for as long as its shards stream.
const backupWorkers = 2

// Setup registers the ValkeyBackup controller.
func Setup(mgr ctrl.Manager, opts options.Options, dialer nodeconn.DialFunc) error {
	r := &backupReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Options: opts, Dialer: dialer, now: time.Now}
	if err := ctrl.NewControllerManagedBy(mgr).
		For(&valkeyv1.ValkeyBackup{}).
		// A backup waiting for its cluster to be Active starts once it is.
		Watches(&valkeyv1.ValkeyCluster{}, backupsOfCluster(mgr.GetClient()), builder.WithPredicates(clusterStateChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: backupWorkers}).
		Named("valkeybackup").
		Complete(r); err != nil {
		return fmt.Errorf("setting up backup controller: %w", err)
	}
	return nil
}

func (r *backupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var b valkeyv1.ValkeyBackup
	if err := r.Get(ctx, req.NamespacedName, &b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var vc valkeyv1.ValkeyCluster
	o := backup.Observed{Phase: b.Status.Phase, Cluster: b.Spec.Cluster}
	if b.Status.Phase != valkeyv1.BackupCompleted && b.Status.Phase != valkeyv1.BackupFailed {
		err := r.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.Cluster}, &vc)
		switch {
		case err == nil:
			o.ClusterFound, o.ClusterState = true, vc.Status.State
		case !apierrors.IsNotFound(err):
			return ctrl.Result{}, fmt.Errorf("reading ValkeyCluster %s: %w", b.Spec.Cluster, err)
		}
	}
	step := backup.Next(o)
	switch step.Action {
	case backup.Nothing:
		return ctrl.Result{}, nil
	case backup.Fail:
		return ctrl.Result{}, r.finish(ctx, &b, valkeyv1.BackupFailed, step.Reason, step.Message)
	case backup.Wait:
		if err := r.setPhase(ctx, &b, valkeyv1.BackupPending, step.Reason, step.Message); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: backupWaitInterval}, nil
	}
	return ctrl.Result{}, r.run(ctx, &b, &vc)
}

// run takes the backup: the destination checked and every shard's source
// chosen before anything is marked Running, then every shard at once,
// then the manifest. Every failure ends the backup Failed with its reason.
func (r *backupReconciler) run(ctx context.Context, b *valkeyv1.ValkeyBackup, vc *valkeyv1.ValkeyCluster) error {
	mc, err := backupStore(ctx, r.APIReader, b.Namespace, b.Spec.Destination)
	if err != nil {
		if de := (destinationError{}); errors.As(err, &de) {
			return r.finish(ctx, b, valkeyv1.BackupFailed, valkeyv1.ReasonBackupDestinationInvalid, err.Error())
		}
		return err
	}
	conn, err := nodeconn.ForCluster(ctx, r.Client, vc, r.Options.ClusterDomain, r.Dialer, nil)
	if err != nil {
		return fmt.Errorf("reaching the nodes of %s: %w", vc.Name, err)
	}
	passwords, err := nodeconn.ClusterPasswords(ctx, r.Client, vc)
	if err != nil {
		return err
	}
	shards, err := r.backupShards(ctx, vc, conn)
	if err != nil {
		return r.finish(ctx, b, valkeyv1.BackupFailed, valkeyv1.ReasonBackupSnapshotFailed, "reading the cluster's shards: "+err.Error())
	}
	sources := make([]backup.Member, len(shards))
	for i, s := range shards {
		if sources[i], err = backup.Source(s); err != nil {
			return r.finish(ctx, b, valkeyv1.BackupFailed, valkeyv1.ReasonBackupSnapshotFailed, err.Error())
		}
	}

	base := backup.Base(b.Spec.Destination.Prefix, b.Namespace, vc.Name, b.Name)
	started := metav1.NewTime(r.now())
	b.Status.StartedAt = &started
	b.Status.Path = backup.Location(b.Spec.Destination.Bucket, base)
	if err := r.setPhase(ctx, b, valkeyv1.BackupRunning, valkeyv1.ReasonBackupRunning,
		fmt.Sprintf("streaming %d shards to %s", len(shards), b.Status.Path)); err != nil {
		return err
	}

	results := make([]backup.ShardResult, len(shards))
	done := make(chan struct{}, len(shards))
	for i, s := range shards {
		go func() {
			defer func() { done <- struct{}{} }()
			res := backup.ShardResult{Index: i, Object: backup.ShardObject(base, i), Slots: backup.SlotStrings(s.Slots)}
			src := caughtUpSource(ctx, conn, s, sources[i])
			results[i] = copyShard(ctx, conn, passwords.Replication, mc, b.Spec.Destination.Bucket, res, src, r.now)
		}()
	}
	for range shards {
		<-done
	}
	b.Status.Shards = statusShards(results)
	manifest, err := backup.BuildManifest(b.Namespace, vc.Name, b.Name, started.Time, results)
	if err != nil {
		return r.finish(ctx, b, valkeyv1.BackupFailed, valkeyv1.ReasonBackupSnapshotFailed, err.Error())
	}
	body, err := manifest.Encode()
	if err == nil {
		err = putManifest(ctx, mc, b.Spec.Destination.Bucket, backup.ManifestObject(base), body)
	}
	if err != nil {
		return r.finish(ctx, b, valkeyv1.BackupFailed, valkeyv1.ReasonBackupSnapshotFailed, err.Error())
	}
	return r.finish(ctx, b, valkeyv1.BackupCompleted, valkeyv1.ReasonBackupCompleted,
		fmt.Sprintf("%d shards and the manifest written to %s", len(shards), b.Status.Path))
}

// statusShards are the shards as status.shards shows them, the failed
// ones with what is known of them.
func statusShards(results []backup.ShardResult) []valkeyv1.BackupShard {
	out := make([]valkeyv1.BackupShard, len(results))
	for i, r := range results {
		out[i] = valkeyv1.BackupShard{
			Index: int32(r.Index), Node: r.Node, Slots: r.Slots, Object: r.Object, Keys: r.Keys,
			ValkeyVersion: r.ValkeyVersion,
		}
		if r.Err == nil {
			out[i].Bytes, out[i].SHA256 = r.Bytes, r.SHA256
		}
	}
	return out
}

// setPhase writes a phase that is not final, with the condition.
func (r *backupReconciler) setPhase(ctx context.Context, b *valkeyv1.ValkeyBackup, phase valkeyv1.BackupPhase, reason, message string) error {
	if b.Status.Phase == phase && b.Status.Message == message {
		return nil
	}
	return r.writeStatus(ctx, b, phase, metav1.ConditionFalse, reason, message)
}

// finish writes a final phase.
func (r *backupReconciler) finish(ctx context.Context, b *valkeyv1.ValkeyBackup, phase valkeyv1.BackupPhase, reason, message string) error {
	now := metav1.NewTime(r.now())
	b.Status.CompletedAt = &now
	status := metav1.ConditionFalse
	if phase == valkeyv1.BackupCompleted {
		status = metav1.ConditionTrue
		b.Status.Bytes = 0
		for _, s := range b.Status.Shards {
			b.Status.Bytes += s.Bytes
		}
	}
	return r.writeStatus(ctx, b, phase, status, reason, message)
}

func (r *backupReconciler) writeStatus(ctx context.Context, b *valkeyv1.ValkeyBackup, phase valkeyv1.BackupPhase, status metav1.ConditionStatus, reason, message string) error {
	b.Status.Phase, b.Status.Message = phase, message
	meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{
		Type: valkeyv1.CondBackupComplete, Status: status, Reason: reason, Message: message, ObservedGeneration: b.Generation,
	})
	if err := r.Status().Update(ctx, b); err != nil {
		return fmt.Errorf("writing the status of ValkeyBackup %s (%s): %w", b.Name, phase, err)
	}
	return nil
}
