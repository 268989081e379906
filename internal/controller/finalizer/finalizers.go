package finalizer

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Set adds (want) or removes finalizer on obj with a merge patch,
// and reports whether it had to change anything. An object already gone
// counts as released.
func Set(ctx context.Context, c client.Client, obj client.Object, finalizer string, want bool) (bool, error) {
	if controllerutil.ContainsFinalizer(obj, finalizer) == want {
		return false, nil
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	if want {
		controllerutil.AddFinalizer(obj, finalizer)
	} else {
		controllerutil.RemoveFinalizer(obj, finalizer)
	}
	if err := c.Patch(ctx, obj, patch); err != nil && (want || !apierrors.IsNotFound(err)) {
		return true, err
	}
	return true, nil
}
