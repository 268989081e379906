// Package permscan is what TestScanRules scans: one call for each rule of
// scanCalls, with the grant it needs in a comment.
package permscan

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
)

type reconciler struct {
	client.Client
	APIReader client.Reader
	Recorder  events.EventRecorder
	cs        kubernetes.Interface
}

func setup(mgr ctrl.Manager) error {
	r := &reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("x")}
	_ = metricsserver.Options{FilterProvider: filters.WithAuthenticationAndAuthorization} // tokenreviews, subjectaccessreviews create
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Namespace{}).                                          // namespaces list, watch
		Owns(&corev1.Endpoints{}).                                         // endpoints list, watch
		Watches(&corev1.LimitRange{}, &handler.EnqueueRequestForObject{}). // limitranges list, watch
		Complete(r)
}

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var pod corev1.Pod
	_ = r.Get(ctx, req.NamespacedName, &pod) // pods list, watch (the cache)
	var s corev1.Secret
	_ = r.APIReader.Get(ctx, req.NamespacedName, &s) // secrets get
	_ = create(ctx, r, &corev1.ConfigMap{})          // configmaps create, through a parameter
	for _, o := range []client.Object{&corev1.Service{}} {
		_ = r.Delete(ctx, o) // services delete, through a range variable
	}
	_ = r.Status().Patch(ctx, &pod, client.MergeFrom(&pod))                        // pods/status patch
	_ = readNodes(ctx, r.APIReader)                                                // nodes list
	_ = readNodes(ctx, r)                                                          // nodes list, watch
	r.Recorder.Eventf(&pod, nil, "Normal", "R", "A", "n")                          // events.k8s.io events create, patch
	_, _ = r.cs.CoreV1().PersistentVolumeClaims("ns").Watch(ctx, v1.ListOptions{}) // persistentvolumeclaims watch
	return ctrl.Result{}, nil
}

func create(ctx context.Context, c client.Client, o client.Object) error { return c.Create(ctx, o) }

func readNodes(ctx context.Context, c client.Reader) error {
	var l corev1.NodeList
	return c.List(ctx, &l)
}
