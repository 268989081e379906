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
// false to leave the cluster alone. A cluster that is gone is not an error.
func Update(ctx context.Context, c client.Client, reader client.Reader, key types.NamespacedName, mutate func(vc *valkeyv1.ValkeyCluster) bool) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var vc valkeyv1.ValkeyCluster
		if err := reader.Get(ctx, key, &vc); err != nil {
			return err
		}
		// Before the cluster controller's first status the reloaders have
		// nothing to report; while Invalid they do nothing.
		if vc.Status.State == "" || vc.Status.State == valkeyv1.StateInvalid || !vc.DeletionTimestamp.IsZero() {
			return nil
		}
		before := vc.Status.DeepCopy()
		if !mutate(&vc) || equality.Semantic.DeepEqual(before, &vc.Status) {
			return nil
		}
		return c.Status().Update(ctx, &vc)
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
