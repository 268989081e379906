package clusterstatus

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// Update changes a few status fields of a ValkeyCluster that
// another controller also writes, by read-modify-write of a fresh copy under
// optimistic concurrency: a merge patch would replace the whole condition
// list and could drop what the other controller just wrote. mutate returns
// false to leave the cluster alone; it may run more than once. A cluster
// that is gone is not an error.
//
// mutate is first tried on a copy of the cluster as c (the cache) holds it,
// and when that changes nothing the cluster is neither read fresh nor
// written: an idle cluster's periodic reports cost no API request. A stale
// cache is safe here: the write it would miss is owed to a change the
// cache has not seen yet, and that change arrives as a watch event. Every
// caller is triggered again by it or soon after: the reloaders' watches
// pass any change of the condition they own (and the TLS reloader's of its
// served counts), and they, like the autoscaler, also look again on their
// own tick; the cluster controller, which records data loss here, on its
// steady resync.
func Update(ctx context.Context, c client.Client, reader client.Reader, key types.NamespacedName, mutate func(vc *valkeyv1.ValkeyCluster) bool) error {
	var cached valkeyv1.ValkeyCluster
	switch err := c.Get(ctx, key, &cached); {
	case apierrors.IsNotFound(err):
		return nil
	case err == nil && !changes(&cached, mutate):
		return nil
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var vc valkeyv1.ValkeyCluster
		if err := reader.Get(ctx, key, &vc); err != nil {
			return err
		}
		if !changes(&vc, mutate) {
			return nil
		}
		return c.Status().Update(ctx, &vc)
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// changes applies mutate to vc and says whether the status is to be
// written.
func changes(vc *valkeyv1.ValkeyCluster, mutate func(vc *valkeyv1.ValkeyCluster) bool) bool {
	// Before the cluster controller's first status the reloaders have
	// nothing to report; while Invalid they do nothing.
	if vc.Status.State == "" || vc.Status.State == valkeyv1.StateInvalid || !vc.DeletionTimestamp.IsZero() {
		return false
	}
	before := vc.Status.DeepCopy()
	return mutate(vc) && !equality.Semantic.DeepEqual(before, &vc.Status)
}
