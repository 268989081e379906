package backup

import (
	"context"
	"fmt"
	"io"
	"path"

	"github.com/minio/minio-go/v7"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/backup"
	"github.com/gomomento/valkey-operator/internal/restore"
)

// backupSource is a backup found and its manifest read and checked.
type backupSource struct {
	mc     *minio.Client
	bucket string
	// base is the folder the manifest was found in; location the same as
	// s3://bucket/base.
	base     string
	location string
	manifest backup.Manifest
}

// object is where shard i's file is: next to the manifest, whatever
// folder the backup was written to, so that a backup's folder can be
// copied to another bucket or path and restored from there.
func (s *backupSource) object(i int) string {
	return s.base + path.Base(s.manifest.Shards[i].Object)
}

// openBackup finds spec.restore's backup, opens its store and reads its
// manifest. A backup not there yet, or a store that does not answer, is
// waited for; a backup that failed, a manifest missing from a Completed
// backup's folder or one that does not check out fails the restore.
func (r *restoreReconciler) openBackup(ctx context.Context, vc *valkeyv1.ValkeyCluster) (*backupSource, error) {
	spec := vc.Spec.Restore
	var dest valkeyv1.BackupDestination
	var location string
	if spec.BackupName != "" {
		var b valkeyv1.ValkeyBackup
		err := r.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: spec.BackupName}, &b)
		switch {
		case apierrors.IsNotFound(err):
			return nil, fmt.Errorf("ValkeyBackup %s does not exist in namespace %s", spec.BackupName, vc.Namespace)
		case err != nil:
			return nil, fmt.Errorf("reading ValkeyBackup %s: %w", spec.BackupName, err)
		case b.Status.Phase == valkeyv1.BackupFailed:
			return nil, failRestore("ValkeyBackup %s failed: %s", b.Name, b.Status.Message)
		case b.Status.Phase != valkeyv1.BackupCompleted:
			return nil, fmt.Errorf("ValkeyBackup %s is %q, not Completed yet", b.Name, b.Status.Phase)
		}
		dest, location = b.Spec.Destination, b.Status.Path
	} else {
		dest, location = spec.Source.Store, spec.Source.Path
	}
	base, err := restore.Base(dest.Bucket, location)
	if err != nil {
		return nil, restoreFailure{err}
	}
	// The store is opened as a backup to that destination would open it:
	// the same Secrets, CA and checks.
	mc, err := backupStore(ctx, r.APIReader, vc.Namespace, dest)
	if err != nil {
		return nil, err
	}
	src := &backupSource{mc: mc, bucket: dest.Bucket, base: base, location: backup.Location(dest.Bucket, base)}
	object := backup.ManifestObject(base)
	body, err := readObject(ctx, mc, dest.Bucket, object)
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return nil, failRestore("no manifest at %s: the backup never completed, or the path is wrong", backup.Location(dest.Bucket, object))
	}
	if err != nil {
		return nil, fmt.Errorf("reading the manifest %s: %s", object, describeStoreError(err))
	}
	if src.manifest, err = restore.ParseManifest(body); err != nil {
		return nil, failRestore("the manifest %s: %v", backup.Location(dest.Bucket, object), err)
	}
	return src, nil
}

// manifestLimit bounds what is read as a manifest: a few hundred bytes a
// shard.
const manifestLimit = 16 << 20

func readObject(ctx context.Context, mc *minio.Client, bucket, object string) ([]byte, error) {
	o, err := mc.GetObject(ctx, bucket, object, minio.GetObjectOptions{})
	if err != nil {
		return nil, err
	}
	defer func() { _ = o.Close() }()
	return io.ReadAll(io.LimitReader(o, manifestLimit))
}
