package backup

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/controller/options"
)

// restoreWorkers is how many clusters are restored at once; each holds
// its worker while its shards load.
const restoreWorkers = 2

// SetupRestore registers the ValkeyRestore controller.
func SetupRestore(mgr ctrl.Manager, opts options.Options, dialer nodeconn.DialFunc) error {
	r := &restoreReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Options: opts, Dialer: dialer,
		Recorder: mgr.GetEventRecorder("valkey-operator"),
		feed:     &restoreFeed{address: opts.RestoreFeedAddress, host: opts.RestoreFeedHost},
		now:      time.Now, ours: map[string]bool{},
	}
	withRestore := predicate.NewPredicateFuncs(func(o client.Object) bool {
		vc, ok := o.(*valkeyv1.ValkeyCluster)
		return ok && vc.Spec.Restore != nil
	})
	if err := ctrl.NewControllerManagedBy(mgr).
		For(&valkeyv1.ValkeyCluster{}, builder.WithPredicates(withRestore)).
		// A restore waiting for its ValkeyBackup to complete begins once it
		// has, not at the end of its error back-off.
		Watches(&valkeyv1.ValkeyBackup{}, restoresFromBackup(mgr.GetClient()), builder.WithPredicates(backupPhaseChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: restoreWorkers}).
		Named("restore").
		Complete(r); err != nil {
		return fmt.Errorf("setting up restore controller: %w", err)
	}
	return mgr.Add(r.feed)
}

func (r *restoreReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// Read around the cache: a pass queued before this controller's own
	// last status write may run before the cache has that write, and a
	// restore it takes for not begun, or still running, would check an
	// emptiness it filled itself or start a shard again.
	var vc valkeyv1.ValkeyCluster
	if err := r.APIReader.Get(ctx, req.NamespacedName, &vc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if vc.Spec.Restore == nil || !vc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if st := vc.Status.Restore; st != nil && (st.Phase == valkeyv1.RestoreCompleted || st.Phase == valkeyv1.RestoreFailed) {
		return ctrl.Result{}, r.removeLoaders(ctx, &vc)
	}
	if why, ok := awaitingRestore(&vc); !ok {
		if err := r.patchRestore(ctx, &vc, func(st *valkeyv1.RestoreStatus) {
			if st.Phase == "" {
				st.Phase = valkeyv1.RestorePending
			}
			if st.Phase == valkeyv1.RestorePending {
				st.Message = why
			}
		}); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: r.Options.PendingRequeue}, nil
	}
	err := r.run(ctx, &vc)
	if f := (restoreFailure{}); errors.As(err, &f) {
		r.Recorder.Eventf(&vc, nil, corev1.EventTypeWarning, valkeyv1.ReasonRestoreFailed, "Restore", "%s", f.Error())
		return ctrl.Result{}, r.patchRestore(ctx, &vc, func(st *valkeyv1.RestoreStatus) {
			now := metav1.NewTime(r.now())
			st.Phase, st.Message, st.CompletedAt = valkeyv1.RestoreFailed, f.Error(), &now
		})
	}
	if err != nil {
		// Retried with back-off; the status says what is in the way.
		if perr := r.patchRestore(ctx, &vc, func(st *valkeyv1.RestoreStatus) {
			// The cluster may report itself formed before this controller
			// first wrote the restore's status: a status needs its phase.
			if st.Phase == "" {
				st.Phase = valkeyv1.RestorePending
			}
			st.Message = "retrying: " + err.Error()
		}); perr != nil {
			return ctrl.Result{}, errors.Join(err, perr)
		}
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// awaitingRestore says whether the cluster controller reports the cluster
// formed and waiting for its keys, or else what the restore waits for.
func awaitingRestore(vc *valkeyv1.ValkeyCluster) (string, bool) {
	c := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondReady)
	if c != nil && c.Reason == valkeyv1.ReasonRestoring {
		return "", true
	}
	why := "waiting for the cluster to form"
	if c != nil && c.Message != "" {
		why += ": " + c.Message
	}
	return why, false
}
