package backup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/minio/minio-go/v7"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/backup"
)

// pruneTimeout bounds one backup's object deletion, so a store that stops
// answering fails the pass (and is retried) instead of holding it.
const pruneTimeout = 2 * time.Minute

// prune deletes the backups out of retention, each one's objects before
// the ValkeyBackup, and returns the backups that remain. A backup whose
// objects could not be deleted stays, so the next pass tries again; the
// others are pruned regardless.
func (r *scheduledBackupReconciler) prune(ctx context.Context, sb *valkeyv1.ValkeyScheduledBackup, owned []valkeyv1.ValkeyBackup,
	ret backup.Retention, now time.Time) ([]valkeyv1.ValkeyBackup, error) {
	out := map[string]bool{}
	for _, name := range backup.Prune(keptOf(owned), ret, now) {
		out[name] = true
	}
	var kept []valkeyv1.ValkeyBackup
	var errs []error
	for i := range owned {
		b := &owned[i]
		if !out[b.Name] {
			kept = append(kept, *b)
			continue
		}
		if err := r.pruneOne(ctx, sb, b); err != nil {
			kept = append(kept, *b)
			errs = append(errs, err)
		}
	}
	return kept, errors.Join(errs...)
}

func (r *scheduledBackupReconciler) pruneOne(ctx context.Context, sb *valkeyv1.ValkeyScheduledBackup, b *valkeyv1.ValkeyBackup) error {
	dest, base, err := backup.PruneTarget(b.Namespace, b.Name, b.Spec.Cluster, b.Status.Path, b.Spec.Destination, sb.Spec.Destination)
	if err != nil {
		return err
	}
	if base != "" {
		ctx, cancel := context.WithTimeout(ctx, pruneTimeout)
		defer cancel()
		mc, err := backupStore(ctx, r.APIReader, sb.Namespace, dest)
		if err != nil {
			return fmt.Errorf("pruning backup %s: %w", b.Name, err)
		}
		if err := removePrefix(ctx, mc, dest.Bucket, base); err != nil {
			return fmt.Errorf("pruning backup %s: deleting %s: %w", b.Name, backup.Location(dest.Bucket, base), err)
		}
	}
	if err := r.Delete(ctx, b, client.Preconditions{UID: &b.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("pruning backup %s: deleting the ValkeyBackup: %w", b.Name, err)
	}
	return nil
}

// removePrefix deletes every object under prefix, then lists again: a
// store that acknowledged a delete it did not do must not let the
// ValkeyBackup go while its objects stay.
func removePrefix(ctx context.Context, mc *minio.Client, bucket, prefix string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	listed := mc.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true})
	objects := make(chan minio.ObjectInfo)
	listErr := make(chan error, 1)
	go func() {
		defer close(objects)
		for o := range listed {
			if o.Err != nil {
				listErr <- fmt.Errorf("listing: %s", describeStoreError(o.Err))
				cancel()
				return
			}
			select {
			case objects <- o:
			case <-ctx.Done():
				return
			}
		}
	}()
	var errs []error
	for e := range mc.RemoveObjects(ctx, bucket, objects, minio.RemoveObjectsOptions{}) {
		errs = append(errs, fmt.Errorf("removing %s: %s", e.ObjectName, describeStoreError(e.Err)))
	}
	select {
	case err := <-listErr:
		errs = append([]error{err}, errs...)
	default:
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	left := 0
	for o := range mc.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return fmt.Errorf("listing after the deletion: %s", describeStoreError(o.Err))
		}
		left++
	}
	if left > 0 {
		return fmt.Errorf("%d objects remain after the deletion", left)
	}
	return nil
}

func keptOf(backups []valkeyv1.ValkeyBackup) []backup.Kept {
	out := make([]backup.Kept, len(backups))
	for i, b := range backups {
		out[i] = backup.Kept{Name: b.Name, Phase: b.Status.Phase, Created: b.CreationTimestamp.Time}
	}
	return out
}
