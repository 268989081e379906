package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/testcerts"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
)

// The copy the nodes mount follows the user's Secret through a CA
// rotation only as the TLS page describes it: straight to a new CA is held,
// the bundle goes through, and the new CA alone is held for as long as the
// recorded served leaves show a node on the old leaf.
func TestCARotationHeldUntilBundled(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "tls-ca-hold")
	const secret = "my-cluster-tls"
	oldCA, newCA := testcerts.NewCA("hold-old-ca"), testcerts.NewCA("hold-new-ca")
	oldLeaf := testcerts.Leaf(oldCA, "my-cluster", ns, "cluster.local")
	newLeaf := testcerts.Leaf(newCA, "my-cluster", ns, "cluster.local")
	if err := k8sClient.Create(ctx, testcerts.Secret(secret, ns, oldLeaf)); err != nil {
		t.Fatal(err)
	}
	vc := &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "my-cluster"},
		Spec: valkeyv1.ValkeyClusterSpec{ConfigRef: menu(t, "tlshold"), Shards: 1, ReplicasPerShard: 1,
			TLS: &valkeyv1.TLSSpec{SecretRef: secret}},
	}
	if err := k8sClient.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	copyKey := client.ObjectKey{Namespace: ns, Name: "my-cluster-node-tls"}
	readCopy := func() *corev1.Secret {
		var s corev1.Secret
		if err := k8sClient.Get(ctx, copyKey, &s); err != nil {
			t.Fatalf("node TLS copy: %v", err)
		}
		return &s
	}
	waitCopy := func(what string, leaf *testcerts.LeafCert, ca []byte) {
		t.Helper()
		eventually(t, 20*time.Second, "node TLS copy to hold "+what, func() error {
			var s corev1.Secret
			if err := k8sClient.Get(ctx, copyKey, &s); err != nil {
				return err
			}
			if string(s.Data[tlssecret.KeyCert]) != string(leaf.CertPEM) || string(s.Data[tlssecret.KeyCA]) != string(ca) {
				return fmt.Errorf("not yet")
			}
			return nil
		})
	}
	setUser := func(leaf *testcerts.LeafCert, ca []byte) {
		t.Helper()
		var s corev1.Secret
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: secret}, &s); err != nil {
			t.Fatal(err)
		}
		s.Data = testcerts.Secret(secret, ns, leaf, ca).Data
		if err := k8sClient.Update(ctx, &s); err != nil {
			t.Fatal(err)
		}
	}
	setServed := func(leaves ...*testcerts.LeafCert) {
		t.Helper()
		var fps []string
		for _, l := range leaves {
			fps = append(fps, tlssecret.Fingerprint(l.Cert.Raw))
		}
		s := readCopy()
		patch := client.MergeFrom(s.DeepCopy())
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[valkeyv1.AnnotationVerifiedLeaves] = strings.Join(fps, ",")
		if err := k8sClient.Patch(ctx, s, patch); err != nil {
			t.Fatal(err)
		}
	}
	expectHeld := func(t *testing.T, leaf *testcerts.LeafCert, keep *testcerts.LeafCert, keepCA []byte) {
		t.Helper()
		want := tlssecret.CABundleRequiredMessage(secret, []string{tlssecret.Fingerprint(leaf.Cert.Raw)})
		eventually(t, 20*time.Second, "the rotation held", func() error {
			got := getCluster(t, ns, vc.Name)
			c := apimeta.FindStatusCondition(got.Status.Conditions, valkeyv1.CondTLSValid)
			if got.Status.State != valkeyv1.StateInvalid || got.Status.Message != want ||
				c == nil || c.Status != metav1.ConditionFalse || c.Reason != valkeyv1.ReasonCABundleRequired {
				return fmt.Errorf("state %q message %q, TLSValid %+v", got.Status.State, got.Status.Message, c)
			}
			return nil
		})
		s := readCopy()
		if string(s.Data[tlssecret.KeyCert]) != string(keep.CertPEM) || string(s.Data[tlssecret.KeyCA]) != string(keepCA) {
			t.Fatal("the held Secret reached the node TLS copy")
		}
	}
	expectReleased := func(t *testing.T) {
		t.Helper()
		eventually(t, 20*time.Second, "the cluster out of Invalid", func() error {
			got := getCluster(t, ns, vc.Name)
			c := apimeta.FindStatusCondition(got.Status.Conditions, valkeyv1.CondTLSValid)
			if got.Status.State == valkeyv1.StateInvalid || c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Errorf("state %q message %q, TLSValid %+v", got.Status.State, got.Status.Message, c)
			}
			return nil
		})
	}
	waitCopy("the first material", oldLeaf, oldCA.CertPEM)
	setServed(oldLeaf)

	// Straight to the new CA.
	setUser(newLeaf, newCA.CertPEM)
	expectHeld(t, oldLeaf, oldLeaf, oldCA.CertPEM)

	// The bundle step.
	both := testcerts.Bundle(oldCA, newCA)
	setUser(newLeaf, both)
	waitCopy("the bundle", newLeaf, both)
	expectReleased(t)

	// The final step while a node is last seen serving the old leaf.
	setServed(oldLeaf, newLeaf)
	setUser(newLeaf, newCA.CertPEM)
	expectHeld(t, oldLeaf, newLeaf, both)

	// Every node seen serving the new leaf: the final step goes through.
	setServed(newLeaf)
	waitCopy("the new CA alone", newLeaf, newCA.CertPEM)
	expectReleased(t)

	// A leaf renewal under the same CA, with a stale older leaf recorded.
	setServed(oldLeaf, newLeaf)
	renewed := testcerts.Leaf(newCA, "my-cluster", ns, "cluster.local")
	setUser(renewed, newCA.CertPEM)
	waitCopy("the renewed leaf", renewed, newCA.CertPEM)
	if got := getCluster(t, ns, vc.Name); got.Status.State == valkeyv1.StateInvalid {
		t.Fatalf("a leaf renewal made the cluster Invalid: %s", got.Status.Message)
	}
}
