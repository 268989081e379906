package backup

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/controller/options"
)

// restoreReconciler fills a new cluster with a backup's keys
// (spec.restore): once the cluster controller reports the cluster formed
// and waiting for it (Ready=False, Restoring), every shard of the backup
// is loaded into a scratch server of its own and its keys are copied to
// the primaries that own their slots. The cluster controller keeps the
// cluster out of Active until status.restore says Completed.
type restoreReconciler struct {
	client.Client
	// APIReader reads the cluster, the store's Secrets, the loaders'
	// Secret and pods around the cache.
	APIReader client.Reader
	Options   options.Options
	Dialer    nodeconn.DialFunc
	Recorder  events.EventRecorder
	feed      *restoreFeed
	now       func() time.Time

	mu sync.Mutex
	// ours are the loader pods this process created (namespace/name): a
	// loader left by an earlier process may hold part of a file, so it is
	// replaced rather than used.
	ours map[string]bool
}

// restoreFailure is a restore that cannot complete whatever is retried:
// it ends Failed with this message.
type restoreFailure struct{ err error }

func (e restoreFailure) Error() string { return e.err.Error() }
func (e restoreFailure) Unwrap() error { return e.err }

func failRestore(format string, args ...any) error {
	return restoreFailure{fmt.Errorf(format, args...)}
}

// patchRestore changes status.restore alone, with a merge patch, so that
// it never races the cluster controller's writes of the rest.
func (r *restoreReconciler) patchRestore(ctx context.Context, vc *valkeyv1.ValkeyCluster, edit func(*valkeyv1.RestoreStatus)) error {
	before := vc.DeepCopy()
	if vc.Status.Restore == nil {
		vc.Status.Restore = &valkeyv1.RestoreStatus{}
	}
	edit(vc.Status.Restore)
	if equality.Semantic.DeepEqual(before.Status.Restore, vc.Status.Restore) {
		return nil
	}
	if err := r.Status().Patch(ctx, vc, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("writing the restore's status: %w", err)
	}
	return nil
}
