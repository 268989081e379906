package controller

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/options"
	"github.com/gomomento/valkey-operator/internal/render"
)

// CacheOptions are the manager's cache settings. The operator watches
// Secrets and Pods in every namespace; unfiltered, its cache would hold
// every Secret (with its data) and every Pod of the Kubernetes cluster.
// Filtered, it holds those carrying the operator's managed-by label, which
// every Secret and Pod it creates carries. Secrets it references but does
// not own, a user's TLS Secret, are read around the cache and watched by
// name (watch.SecretWatches).
//
// With WatchNamespaces set, every namespaced kind is cached from those
// namespaces only: a namespace-scoped install holds no permission to list
// anywhere else, and an informer outside them would fail forever. The
// cluster-scoped menu kinds are still cached cluster-wide. The metering
// records live in the operator's own namespace, watched or not, and only
// there.
func CacheOptions(opts options.Options) cache.Options {
	// No decision reads who wrote a field; managedFields is a large part
	// of every cached object, and the cache holds every node's pod and
	// every cluster's objects.
	out := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if opts.FilterCache {
		managed := render.ManagedSelector()
		out.ByObject = map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Label: managed},
			&corev1.Pod{}:    {Label: managed},
			// The nodes' claims; a cluster's other claims are not its own.
			&corev1.PersistentVolumeClaim{}: {Label: managed},
		}
	}
	if len(opts.WatchNamespaces) == 0 {
		return out
	}
	out.DefaultNamespaces = map[string]cache.Config{}
	for _, ns := range opts.WatchNamespaces {
		out.DefaultNamespaces[ns] = cache.Config{}
	}
	if out.ByObject == nil {
		out.ByObject = map[client.Object]cache.ByObject{}
	}
	out.ByObject[&valkeyv1.ValkeyMeteringRecord{}] = cache.ByObject{
		Namespaces: map[string]cache.Config{opts.Namespace: {}},
	}
	return out
}
