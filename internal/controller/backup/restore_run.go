package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/restore"
)

// run restores every shard not yet done, in order, recording each as it
// completes: a restore interrupted (the operator killed, a node lost)
// resumes with the shard it was on, whose keys RESTORE ... REPLACE writes
// again.
func (r *restoreReconciler) run(ctx context.Context, vc *valkeyv1.ValkeyCluster) error {
	src, err := r.openBackup(ctx, vc)
	if err != nil {
		return err
	}
	conn, err := nodeconn.ForCluster(ctx, r.Client, vc, r.Options.ClusterDomain, r.Dialer, nil)
	if err != nil {
		return fmt.Errorf("reaching the nodes of %s: %w", vc.Name, err)
	}
	total := len(src.manifest.Shards)
	if st := vc.Status.Restore; st == nil || st.StartedAt == nil {
		if err := r.start(ctx, vc, conn, src); err != nil {
			return err
		}
	}
	for i := int(vc.Status.Restore.ShardsDone); i < total; i++ {
		shard := src.manifest.Shards[i]
		if err := r.patchRestore(ctx, vc, func(st *valkeyv1.RestoreStatus) {
			st.Message = fmt.Sprintf("loading shard %d of %d (slots %s, %d bytes)", i+1, total, strings.Join(shard.Slots, ","), shard.Bytes)
		}); err != nil {
			return err
		}
		keys, err := r.restoreShard(ctx, vc, conn, src, i)
		if err != nil {
			return fmt.Errorf("shard %d of %d: %w", i+1, total, err)
		}
		if err := r.patchRestore(ctx, vc, func(st *valkeyv1.RestoreStatus) {
			st.ShardsDone, st.Keys = int32(i+1), st.Keys+keys
		}); err != nil {
			return err
		}
	}
	msg := fmt.Sprintf("%d keys of %d shards restored from %s", vc.Status.Restore.Keys, total, src.location)
	if err := r.patchRestore(ctx, vc, func(st *valkeyv1.RestoreStatus) {
		now := metav1.NewTime(r.now())
		st.Phase, st.Message, st.CompletedAt = valkeyv1.RestoreCompleted, msg, &now
	}); err != nil {
		return err
	}
	r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.ReasonRestoreCompleted, "Restore", "%s", msg)
	// The status write wakes the next pass, which removes the loaders.
	return nil
}

// start refuses a cluster that already holds keys, and records the start
// before anything is written: from then on, keys in the cluster are the
// restore's own.
func (r *restoreReconciler) start(ctx context.Context, vc *valkeyv1.ValkeyCluster, conn *nodeconn.Connector, src *backupSource) error {
	router, err := newSlotRouter(ctx, r.Client, vc, conn)
	if err != nil {
		return err
	}
	held, err := router.keys(ctx)
	router.close()
	if err != nil {
		return err
	}
	if held > 0 {
		return failRestore("the cluster already holds %d keys: a restore fills only an empty cluster, and nothing was written", held)
	}
	r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.ReasonRestoreStarted, "Restore", "restoring %d shards from %s", len(src.manifest.Shards), src.location)
	return r.patchRestore(ctx, vc, func(st *valkeyv1.RestoreStatus) {
		now := metav1.NewTime(r.now())
		st.Phase, st.StartedAt, st.Backup = valkeyv1.RestoreRunning, &now, src.location
		st.ShardsTotal, st.ShardsDone, st.Keys = int32(len(src.manifest.Shards)), 0, 0
	})
}

// loadTimeout bounds one shard's load: minutes for a loader to start and
// take the file, plus a second per MiB (the slowest store worth waiting
// for).
func loadTimeout(bytes int64) time.Duration {
	return 5*time.Minute + time.Duration(bytes>>20)*time.Second
}

// restoreShard loads shard i's file into its loader and copies the keys
// to the primaries that own their slots; it returns how many it wrote.
func (r *restoreReconciler) restoreShard(ctx context.Context, vc *valkeyv1.ValkeyCluster, conn *nodeconn.Connector, src *backupSource, i int) (int64, error) {
	shard, object := src.manifest.Shards[i], src.object(i)
	feeder, host, port, err := r.feed.get()
	if err != nil {
		return 0, err
	}
	password, err := r.loaderPassword(ctx, vc)
	if err != nil {
		return 0, err
	}
	pod, err := r.loaderPod(ctx, vc, i)
	if err != nil {
		return 0, err
	}
	loader, err := r.dialLoader(ctx, conn, pod, password)
	if err != nil {
		return 0, err
	}
	defer loader.Close()
	server, err := loader.InfoServer(ctx)
	if err != nil {
		return 0, fmt.Errorf("asking loader %s its version: %w", pod.Name, err)
	}
	if err := restore.CanLoad(server.Version.String(), shard.ValkeyVersion); err != nil {
		return 0, restoreFailure{err}
	}
	open := func(ctx context.Context) (io.ReadCloser, int64, error) {
		obj, err := src.mc.GetObject(ctx, src.bucket, object, minio.GetObjectOptions{})
		if err != nil {
			return nil, 0, fmt.Errorf("reading %s: %s", object, describeStoreError(err))
		}
		info, err := obj.Stat()
		if err != nil {
			_ = obj.Close()
			if minio.ToErrorResponse(err).Code == "NoSuchKey" {
				return nil, 0, failRestore("shard %d's file %s is missing from bucket %s", i, object, src.bucket)
			}
			return nil, 0, fmt.Errorf("reading %s: %s", object, describeStoreError(err))
		}
		if info.Size != shard.Bytes {
			_ = obj.Close()
			return nil, 0, failRestore("shard %d's file %s is %d bytes; the manifest says %d", i, object, info.Size, shard.Bytes)
		}
		return readCloser{restore.Verified(obj, shard.Bytes, shard.SHA256), obj}, shard.Bytes, nil
	}
	loadCtx, cancel := context.WithTimeout(ctx, loadTimeout(shard.Bytes))
	err = restore.Load(loadCtx, feeder, host, port, loader, open)
	cancel()
	if errors.Is(err, restore.ErrCorrupt) {
		return 0, failRestore("shard %d's file %s: %v", i, object, err)
	}
	if err != nil {
		// A loader that took part of a file is not used again.
		return 0, errors.Join(fmt.Errorf("loading %s into %s: %w", object, pod.Name, err), r.deleteLoader(ctx, pod))
	}
	router, err := newSlotRouter(ctx, r.Client, vc, conn)
	if err != nil {
		return 0, err
	}
	defer router.close()
	keys, err := restore.CopyKeys(ctx, loader, router.write)
	if err != nil {
		return 0, fmt.Errorf("copying the keys of %s: %w", pod.Name, err)
	}
	return keys, r.deleteLoader(ctx, pod)
}

// readCloser reads through a check and closes the object under it.
type readCloser struct {
	io.Reader
	io.Closer
}
