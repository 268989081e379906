package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/testcerts"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
)

// Rotating straight to a new CA, the step the TLS page warns against, is
// held: the copy the nodes mount keeps the old CA and leaf, so no node is
// split from its peers; the cluster says why (Invalid, TLSValid
// CABundleRequired, one Warning) and keeps serving and healing with what it
// has, a replacement replica mounting the held copy. The bundle step then
// goes through, and so does the final step once every node serves the new
// leaf; no acknowledged write is lost on the way.
func TestTLSCARotationWithoutBundleHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	oldCA, newCA := testcerts.NewCA("held-old-ca"), testcerts.NewCA("held-new-ca")
	both := testcerts.Bundle(oldCA, newCA)
	f := newTLSCluster(t, "tls-ca-held", oldCA, 1, 1)
	c := clusterClient(t, f.service(), both)
	data := writeKeys(t, c, "held", 200)
	waitReplicated(t, c)
	load := startLoad(c, "held-traffic")

	copyKey := client.ObjectKey{Namespace: f.ns, Name: render.NodeTLSSecretName(f.name)}
	copyData := func() map[string][]byte {
		var s corev1.Secret
		if err := k8sClient.Get(ctx, copyKey, &s); err != nil {
			t.Fatalf("node copy: %v", err)
		}
		return s.Data
	}
	sameData := func(a, b map[string][]byte) bool {
		return maps.EqualFunc(a, b, func(x, y []byte) bool { return string(x) == string(y) })
	}
	held := copyData()

	// The skipped bundle step: the new CA alone with its leaf.
	next := testcerts.Leaf(newCA, f.name, f.ns, clusterDomain)
	f.rotate(next, newCA.CertPEM)
	want := tlssecret.CABundleRequiredMessage(f.secret, []string{tlssecret.Fingerprint(f.leaf.Cert.Raw)})
	f.waitCondition(valkeyv1.CondTLSValid, metav1.ConditionFalse, valkeyv1.ReasonCABundleRequired, want, 30*time.Second)
	f.waitEvent(corev1.EventTypeWarning, valkeyv1.ReasonCABundleRequired, want, 10*time.Second)
	vc := f.cluster()
	if vc.Status.State != valkeyv1.StateInvalid || vc.Status.Message != want {
		t.Fatalf("held rotation: state %s, message %q; want Invalid with %q", vc.Status.State, vc.Status.Message, want)
	}
	if r := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondReady); r == nil || r.Status != metav1.ConditionFalse {
		t.Fatalf("Ready %+v while the rotation is held", r)
	}
	if !sameData(copyData(), held) {
		t.Fatal("the new CA reached the Secret the nodes mount without the bundle step")
	}
	// Every key is still served with the old CA alone: no node moved.
	checkKeys(t, clusterClient(t, f.service(), oldCA.CertPEM), data)
	f.waitServing(oldCA.CertPEM, f.leaf, 10*time.Second)

	// Healing goes on: a lost replica is replaced, mounts the held copy and
	// syncs from its primary over TLS with the old CA.
	lost := vc.Status.ShardStatuses[0].Replicas[0]
	fail(t, f.ns, lost, podDeleted)
	eventually(t, 3*time.Minute, "the deleted replica replaced while the rotation is held", func() error {
		vc := f.cluster()
		if vc.Status.State != valkeyv1.StateInvalid || vc.Status.Message != want {
			return fmt.Errorf("state %s (%s)", vc.Status.State, vc.Status.Message)
		}
		if err := shardsWhole(vc, lost); err != nil {
			return err
		}
		if slices.Contains(f.podNames(), lost) {
			return fmt.Errorf("pod %s still there", lost)
		}
		if d := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondDegraded); d == nil || d.Status != metav1.ConditionFalse {
			return fmt.Errorf("conditions %v", conditionSummary(vc))
		}
		return nil
	})
	waitReplicated(t, c)
	f.waitServing(oldCA.CertPEM, f.leaf, time.Minute)
	if !sameData(copyData(), held) {
		t.Fatal("the held copy changed while the rotation is held")
	}
	checkKeys(t, clusterClient(t, f.service(), oldCA.CertPEM), data)
	if n := countEvents(t, f.key, valkeyv1.ReasonCABundleRequired, ""); n != 1 {
		t.Fatalf("%d %s Events for one held rotation, want 1", n, valkeyv1.ReasonCABundleRequired)
	}

	// The bundle step goes through at once.
	f.rotate(next, both)
	f.waitCondition(valkeyv1.CondTLSValid, metav1.ConditionTrue, valkeyv1.ReasonValid, "", 30*time.Second)
	f.waitServing(both, next, 2*time.Minute)
	f.waitCondition(valkeyv1.CondCertificatesServed, metav1.ConditionTrue, valkeyv1.ReasonServingCurrent, "", time.Minute)

	// The final step, every node serving the new leaf, is not held.
	f.rotate(next, newCA.CertPEM)
	eventually(t, 30*time.Second, "the new CA alone in the node copy", func() error {
		if got := string(copyData()[tlssecret.KeyCA]); got != string(newCA.CertPEM) {
			return fmt.Errorf("node copy ca.crt holds %d bytes, want the new CA's %d", len(got), len(newCA.CertPEM))
		}
		return nil
	})
	f.waitCondition(valkeyv1.CondTLSValid, metav1.ConditionTrue, valkeyv1.ReasonValid, "", 30*time.Second)
	waitActive(t, f.key, 1, 1, time.Minute)
	f.waitCondition(valkeyv1.CondCertificatesServed, metav1.ConditionTrue, valkeyv1.ReasonServingCurrent, "", time.Minute)
	f.waitServing(newCA.CertPEM, next, time.Minute)
	if n := countEvents(t, f.key, valkeyv1.ReasonCABundleRequired, ""); n != 1 {
		t.Fatalf("%d %s Events, want only the one of the skipped step", n, valkeyv1.ReasonCABundleRequired)
	}

	acked := load.finish(t)
	fresh := clusterClient(t, f.service(), newCA.CertPEM)
	checkKeys(t, fresh, data)
	checkAll(t, fresh, acked)
}
