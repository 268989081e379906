package controller

import (
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gomomento/valkey-operator/internal/controller/options"
)

// errorBackoff paces the retries of a cluster whose reconcile keeps failing:
// exponential per cluster from ErrorBackoffBase, capped at ErrorBackoffMax,
// and forgotten on the first success. A fixed short requeue would hammer an
// apiserver or a node that is already struggling, for as long as it
// struggles. Watch events (a pod changing, the spec edited) still reconcile
// at once: only the error path waits.
func errorBackoff(o options.Options) workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](o.ErrorBackoffBase, o.ErrorBackoffMax)
}
