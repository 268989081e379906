package realnode

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gomomento/valkey-operator/internal/testcerts"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
)

// TestTLSRotationInPlace rotates the leaf as the TLS page says: the
// Secret's data updated in place (a new leaf from the same CA, valid
// longer). The real kubelet projects the new files into every pod, the
// operator reloads each node, and the page's openssl check from a client
// pod shows every node serving the new certificate; no container
// restarted, no pod replaced, and a client writing and reading all along
// saw no failure and lost nothing.
func TestTLSRotationInPlace(t *testing.T) {
	f := newTLSCluster(t, "rotation", "cache", 3, 1)
	f.waitServing(f.leaf, 10*time.Second)
	before := map[string]types.UID{}
	for _, p := range clusterPods(t, f.key) {
		before[p.Name] = p.UID
	}
	c := f.clusterClient()
	want := writeKeys(t, c, "before", 300)
	load := startChecking(c, "during")

	next := testcerts.Leaf(f.ca, f.key.Name, f.key.Namespace, clusterDomain, testcerts.WithValidity(time.Now().Add(-time.Hour), time.Now().AddDate(0, 0, 180)))
	if !next.Cert.NotAfter.After(f.leaf.Cert.NotAfter) {
		t.Fatalf("the new leaf ends %s, not after the old one's %s", next.Cert.NotAfter, f.leaf.Cert.NotAfter)
	}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var s corev1.Secret
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: f.key.Namespace, Name: f.secret}, &s); err != nil {
			return err
		}
		s.Data[tlssecret.KeyCert] = next.CertPEM
		s.Data[tlssecret.KeyPrivateKey] = next.KeyPEM
		return k8sClient.Update(context.Background(), &s)
	}); err != nil {
		t.Fatalf("updating Secret %s: %v", f.secret, err)
	}
	// The kubelet's projection of a changed Secret (up to about a minute)
	// and the reload tick (30 s), with room for a slow machine.
	took := f.waitServing(next, 4*time.Minute)
	t.Logf("Secret updated → every node serving the new certificate in %v", took.Round(100*time.Millisecond))
	f.waitCertificatesServed(time.Minute)

	acked := load.finishUndisturbed(t)
	pods := clusterPods(t, f.key)
	for i := range pods {
		p := &pods[i]
		if uid, ok := before[p.Name]; !ok || uid != p.UID {
			t.Errorf("pod %s (UID %s) is not the pod from before the rotation (%s)", p.Name, p.UID, uid)
		}
		for _, problem := range podProblems(p) {
			t.Error(problem)
		}
	}
	if len(pods) != len(before) {
		t.Errorf("%d pods after the rotation, %d before", len(pods), len(before))
	}
	for k, v := range acked {
		want[k] = v
	}
	checkAll(t, f.clusterClient(), want)
}
