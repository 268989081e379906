package cluster

import (
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/watch"
)

// fakeCache is a fake client with the cache's indexes, as the reconciler
// lists through them.
func fakeCache(scheme *runtime.Scheme) *fake.ClientBuilder {
	b := fake.NewClientBuilder().WithScheme(scheme)
	b = b.WithIndex(&valkeyv1.ValkeyNode{}, watch.InstanceIndex, watch.InstanceOf)
	b = b.WithIndex(&corev1.Pod{}, watch.InstanceIndex, watch.InstanceOf)
	b = b.WithIndex(&corev1.PersistentVolumeClaim{}, watch.InstanceIndex, watch.InstanceOf)
	return b.WithIndex(&policyv1.PodDisruptionBudget{}, watch.InstanceIndex, watch.InstanceOf)
}
