package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/testcerts"
)

// The operator's cache holds only the Secrets and Pods it labeled. A
// user's TLS Secret carries no such label: it stays out of the cache, yet
// the operator reads it, and notices a change to it at once rather than on
// the 30-second resync of an Invalid cluster.
func TestCacheHoldsOnlyTheOperatorsSecretsAndPods(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "cache-filter")
	cfg := menu(t, "cache")
	unrelatedSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unrelated"},
		StringData: map[string]string{"token": "not the operator's"}}
	unrelatedPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unrelated",
		Labels: map[string]string{valkeyv1.LabelInstance: "cached"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1"}}}}
	ca := testcerts.NewCA("cache-ca")
	user := testcerts.Secret("user-tls", ns, testcerts.Leaf(ca, "cached", ns, "cluster.local"))
	valid := user.DeepCopy().Data
	delete(user.Data, "ca.crt")
	for _, o := range []client.Object{unrelatedSecret, unrelatedPod, user} {
		if err := k8sClient.Create(ctx, o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
	vc := &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cached"},
		Spec: valkeyv1.ValkeyClusterSpec{ConfigRef: cfg, Shards: 1,
			TLS: &valkeyv1.TLSSpec{SecretRef: user.Name}},
	}
	if err := k8sClient.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}

	// The message names a key the Secret lacks: the Secret was read.
	const invalid = `TLS Secret "user-tls" missing required key "ca.crt"`
	eventually(t, 20*time.Second, "Invalid: "+invalid, func() error {
		got := getCluster(t, ns, vc.Name)
		if got.Status.State != valkeyv1.StateInvalid || got.Status.Message != invalid {
			return fmt.Errorf("state %q message %q", got.Status.State, got.Status.Message)
		}
		return nil
	})
	// Within 10 s, a third of the 30 s resync of an Invalid cluster: only
	// the watch on the Secret can be that quick.
	fixed := time.Now()
	var sec corev1.Secret
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(user), &sec); err != nil {
		t.Fatal(err)
	}
	sec.Data = valid
	if err := k8sClient.Update(ctx, &sec); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "TLSValid after the fix", func() error {
		c := apimeta.FindStatusCondition(getCluster(t, ns, vc.Name).Status.Conditions, valkeyv1.CondTLSValid)
		if c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("TLSValid %+v", c)
		}
		return nil
	})
	t.Logf("the fix was noticed in %s", time.Since(fixed).Round(10*time.Millisecond))

	// The operator's own objects reach its cache: its Secrets, and the pod
	// of the node bootstrap creates.
	eventually(t, 20*time.Second, "the operator's Secrets and pod in its cache", func() error {
		for _, name := range []string{"cached-operator-auth", "cached-node-tls"} {
			if err := operatorCache.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{}); err != nil {
				return fmt.Errorf("Secret %s: %w", name, err)
			}
		}
		var pods corev1.PodList
		if err := operatorCache.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(pods.Items) == 0 {
			return fmt.Errorf("no pod in the cache")
		}
		return nil
	})
	for _, tc := range []struct {
		obj  client.Object
		name string
	}{{&corev1.Secret{}, unrelatedSecret.Name}, {&corev1.Secret{}, user.Name}, {&corev1.Pod{}, unrelatedPod.Name}} {
		err := operatorCache.Get(ctx, client.ObjectKey{Namespace: ns, Name: tc.name}, tc.obj)
		if !apierrors.IsNotFound(err) {
			t.Errorf("%T %s in the operator's cache: %v, want NotFound", tc.obj, tc.name, err)
		}
	}
	var secrets corev1.SecretList
	var pods corev1.PodList
	for _, l := range []client.ObjectList{&secrets, &pods} {
		if err := operatorCache.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range secrets.Items {
		if s.Labels[valkeyv1.LabelManagedBy] != valkeyv1.LabelManagedByValue {
			t.Errorf("Secret %s without the managed-by label in the cache", s.Name)
		}
	}
	for _, p := range pods.Items {
		if p.Labels[valkeyv1.LabelManagedBy] != valkeyv1.LabelManagedByValue {
			t.Errorf("pod %s without the managed-by label in the cache", p.Name)
		}
	}
}
