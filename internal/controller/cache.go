package controller

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gomomento/valkey-operator/internal/render"
)

// CacheOptions are the manager's cache settings. The operator watches
// Secrets and Pods in every namespace; unfiltered, its cache would hold
// every Secret (with its data) and every Pod of the Kubernetes cluster.
// Filtered, it holds those carrying the operator's managed-by label, which
// every Secret and Pod it creates carries. Secrets it references but does
// not own, a user's TLS Secret, are read around the cache and watched by
// name (secretWatches).
func CacheOptions(opts Options) cache.Options {
	if !opts.FilterCache {
		return cache.Options{}
	}
	managed := render.ManagedSelector()
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Label: managed},
		&corev1.Pod{}:    {Label: managed},
	}}
}
