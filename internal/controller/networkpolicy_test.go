package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// Each cluster gets its NetworkPolicy with its other objects; an edit to
// it is undone, the clients named in the spec reach it, and turning it off
// removes it.
func TestClusterNetworkPolicy(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "network-policy")
	vc := &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "guarded"},
		Spec:       valkeyv1.ValkeyClusterSpec{ConfigRef: menu(t, "netpol"), Shards: 1},
	}
	if err := k8sClient.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: "guarded-ingress"}
	policy := func() (*networkingv1.NetworkPolicy, error) {
		var np networkingv1.NetworkPolicy
		return &np, k8sClient.Get(ctx, key, &np)
	}
	clientsFrom := func(np *networkingv1.NetworkPolicy) []networkingv1.NetworkPolicyPeer {
		return np.Spec.Ingress[0].From
	}
	eventually(t, 20*time.Second, "the NetworkPolicy", func() error {
		np, err := policy()
		if err != nil {
			return err
		}
		if got := np.Spec.PodSelector.MatchLabels[valkeyv1.LabelInstance]; got != vc.Name {
			return fmt.Errorf("podSelector %v", np.Spec.PodSelector)
		}
		if len(np.Spec.Ingress) != 3 || len(clientsFrom(np)) != 1 || len(clientsFrom(np)[0].PodSelector.MatchLabels) != 0 {
			return fmt.Errorf("ingress %+v: want clients from the namespace, peers and the operator", np.Spec.Ingress)
		}
		return nil
	})

	np, err := policy()
	if err != nil {
		t.Fatal(err)
	}
	np.Spec.Ingress = nil // someone opens the pods to nobody
	if err := k8sClient.Update(ctx, np); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the edit undone", func() error {
		np, err := policy()
		if err != nil {
			return err
		}
		if len(np.Spec.Ingress) != 3 {
			return fmt.Errorf("%d rules", len(np.Spec.Ingress))
		}
		return nil
	})

	web := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
	updateCluster(t, vc, func(vc *valkeyv1.ValkeyCluster) {
		vc.Spec.NetworkPolicy = &valkeyv1.NetworkPolicySpec{Clients: []networkingv1.NetworkPolicyPeer{web}}
	})
	eventually(t, 20*time.Second, "clients app=web", func() error {
		np, err := policy()
		if err != nil {
			return err
		}
		if from := clientsFrom(np); len(from) != 1 || from[0].PodSelector.MatchLabels["app"] != "web" {
			return fmt.Errorf("clients %+v", from)
		}
		return nil
	})

	updateCluster(t, vc, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.NetworkPolicy.Enabled = ptr.To(false) })
	eventually(t, 20*time.Second, "the NetworkPolicy removed", func() error {
		if _, err := policy(); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get: %v", err)
		}
		return nil
	})
}

// updateCluster applies mutate to a fresh copy of the cluster, again on a
// conflict: the operator writes the cluster's status meanwhile.
func updateCluster(t *testing.T, vc *valkeyv1.ValkeyCluster, mutate func(vc *valkeyv1.ValkeyCluster)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := getCluster(t, vc.Namespace, vc.Name)
		mutate(got)
		return k8sClient.Update(context.Background(), got)
	})
	if err != nil {
		t.Fatal(err)
	}
}
