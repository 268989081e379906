package backup

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// What the backup and restore controllers wait on is written by other
// controllers: a backup waits for its cluster to be Active (the cluster
// controller's status), a restore for its ValkeyBackup to complete (the
// backup controller's). Each such write wakes the waiting object at once.

// backupsOfCluster maps a cluster to the backups of it that are not over.
func backupsOfCluster(c client.Reader) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		var list valkeyv1.ValkeyBackupList
		if err := c.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, b := range list.Items {
			if b.Spec.Cluster == o.GetName() && b.Status.Phase != valkeyv1.BackupCompleted && b.Status.Phase != valkeyv1.BackupFailed {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Name}})
			}
		}
		return out
	})
}

// clusterStateChanged passes a cluster update that moves its state, what a
// waiting backup decides from.
func clusterStateChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*valkeyv1.ValkeyCluster)
		n, ok2 := e.ObjectNew.(*valkeyv1.ValkeyCluster)
		return !ok1 || !ok2 || o.Status.State != n.Status.State
	}}
}

// restoresFromBackup maps a backup to the clusters restoring from it.
func restoresFromBackup(c client.Reader) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		var list valkeyv1.ValkeyClusterList
		if err := c.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, vc := range list.Items {
			if r := vc.Spec.Restore; r != nil && r.BackupName == o.GetName() {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: vc.Namespace, Name: vc.Name}})
			}
		}
		return out
	})
}

// backupPhaseChanged passes a backup update that moves its phase, what a
// waiting restore decides from.
func backupPhaseChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*valkeyv1.ValkeyBackup)
		n, ok2 := e.ObjectNew.(*valkeyv1.ValkeyBackup)
		return !ok1 || !ok2 || o.Status.Phase != n.Status.Phase
	}}
}
