package e2e

import (
	"context"
	"encoding/pem"
	"fmt"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/testcerts"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
)

// Every way the TLS Secret can break on a running cluster puts it in
// Invalid with the exact message and touches nothing the nodes use: pods,
// data and the copy the pods mount stay as they were. Restoring the Secret
// brings the cluster back to Active with no edit to the ValkeyCluster.
func TestTLSInvalidSecretOnActiveCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ca := testcerts.NewCA("invalid-ca")
	f := newTLSCluster(t, "tls-invalid", ca, 1, 1)
	c := clusterClient(t, f.service(), ca.CertPEM)
	data := writeKeys(t, c, "invalid", 200)
	generation := f.cluster().Generation

	good := testcerts.Secret(f.secret, f.ns, f.leaf)
	copyKey := client.ObjectKey{Namespace: f.ns, Name: render.NodeTLSSecretName(f.name)}
	var nodeCopy corev1.Secret
	if err := k8sClient.Get(ctx, copyKey, &nodeCopy); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(nodeCopy.Data, good.Data) {
		t.Fatal("the node copy does not hold the user's Secret")
	}
	before := f.podSnapshot()

	other := testcerts.NewCA("not-the-issuer")
	sans := testcerts.SANs(f.name, f.ns, clusterDomain)
	service, wildcard := sans[0], sans[1]
	with := func(typ corev1.SecretType, edit func(d map[string][]byte)) *corev1.Secret {
		s := good.DeepCopy()
		s.Type = typ
		edit(s.Data)
		return s
	}
	withLeaf := func(l *testcerts.LeafCert) *corev1.Secret {
		return testcerts.Secret(f.secret, f.ns, l, ca.CertPEM)
	}
	notX509 := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not a certificate")})
	stranger := testcerts.Leaf(ca, f.name, f.ns, clusterDomain)

	// kubernetes.io/tls Secrets must hold tls.crt and tls.key, so the cases
	// that lack them use an Opaque Secret; the operator does not check the
	// type.
	tests := []struct {
		name    string
		secret  *corev1.Secret // nil deletes the Secret
		message string
	}{
		{"Secret deleted", nil, tlssecret.SecretNotFoundMessage(f.secret, f.ns)},
		{"no data", with(corev1.SecretTypeOpaque, func(d map[string][]byte) { clear(d) }),
			tlssecret.SecretEmptyMessage(f.secret)},
		{"tls.crt missing", with(corev1.SecretTypeOpaque, func(d map[string][]byte) { delete(d, tlssecret.KeyCert) }),
			tlssecret.MissingKeyMessage(f.secret, tlssecret.KeyCert)},
		{"tls.key missing", with(corev1.SecretTypeOpaque, func(d map[string][]byte) { delete(d, tlssecret.KeyPrivateKey) }),
			tlssecret.MissingKeyMessage(f.secret, tlssecret.KeyPrivateKey)},
		{"ca.crt missing", with(corev1.SecretTypeTLS, func(d map[string][]byte) { delete(d, tlssecret.KeyCA) }),
			tlssecret.MissingKeyMessage(f.secret, tlssecret.KeyCA)},
		{"tls.crt not PEM", with(corev1.SecretTypeTLS, func(d map[string][]byte) { d[tlssecret.KeyCert] = []byte("not pem") }),
			tlssecret.CertNotPEMMessage(f.secret)},
		{"tls.crt PEM but not X.509", with(corev1.SecretTypeTLS, func(d map[string][]byte) { d[tlssecret.KeyCert] = notX509 }),
			tlssecret.CertNotX509Message(f.secret)},
		{"Service SAN missing", withLeaf(testcerts.Leaf(ca, f.name, f.ns, clusterDomain, testcerts.WithDNSNames(wildcard))),
			tlssecret.MissingSANMessage(f.secret, service)},
		{"wildcard SAN missing", withLeaf(testcerts.Leaf(ca, f.name, f.ns, clusterDomain, testcerts.WithDNSNames(service))),
			tlssecret.MissingSANMessage(f.secret, wildcard)},
		{"key does not match", with(corev1.SecretTypeTLS, func(d map[string][]byte) { d[tlssecret.KeyPrivateKey] = stranger.KeyPEM }),
			tlssecret.KeyMismatchMessage(f.secret)},
		{"ca.crt not PEM", with(corev1.SecretTypeTLS, func(d map[string][]byte) { d[tlssecret.KeyCA] = []byte("not pem") }),
			tlssecret.CANotPEMMessage(f.secret)},
		{"leaf not signed by ca.crt", with(corev1.SecretTypeTLS, func(d map[string][]byte) { d[tlssecret.KeyCA] = other.CertPEM }),
			tlssecret.CertNotSignedByCAMessage(f.secret)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			applySecret(t, f.ns, f.secret, tc.secret)
			eventually(t, 30*time.Second, "Invalid with "+tc.message, func() error {
				vc := f.cluster()
				if vc.Status.State != valkeyv1.StateInvalid || vc.Status.Message != tc.message {
					return fmt.Errorf("state %s, message %q", vc.Status.State, vc.Status.Message)
				}
				cond := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondTLSValid)
				if cond == nil || cond.Status != metav1.ConditionFalse || cond.Message != tc.message {
					return fmt.Errorf("TLSValid %+v", cond)
				}
				return nil
			})
			t.Logf("Invalid after %s", time.Since(start).Round(time.Millisecond))

			var got corev1.Secret
			if err := k8sClient.Get(ctx, copyKey, &got); err != nil {
				t.Fatalf("node copy: %v", err)
			}
			if !maps.EqualFunc(got.Data, good.Data, func(a, b []byte) bool { return string(a) == string(b) }) {
				t.Fatal("invalid material reached the Secret the pods mount")
			}
			f.assertPodsUntouched(before)
			checkKeys(t, c, data)
			// The nodes keep serving the certificate they had.
			if _, err := f.served(ca.CertPEM); err != nil {
				t.Fatalf("served certificate while Invalid: %v", err)
			}

			start = time.Now()
			applySecret(t, f.ns, f.secret, good)
			waitActive(t, f.key, 1, 1, time.Minute)
			t.Logf("Active again %s after the Secret was restored", time.Since(start).Round(time.Millisecond))
		})
	}
	if g := f.cluster().Generation; g != generation {
		t.Fatalf("the ValkeyCluster was edited: generation %d, was %d", g, generation)
	}
	f.assertPodsUntouched(before)
	checkKeys(t, c, data)
}

// applySecret makes the Secret name look like want, deleting it when want
// is nil. A Secret's type cannot change, so a new type means a new Secret.
func applySecret(t testing.TB, ns, name string, want *corev1.Secret) {
	t.Helper()
	ctx := context.Background()
	var cur corev1.Secret
	err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cur)
	exists := err == nil
	if err != nil && client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	if exists && (want == nil || cur.Type != want.Type) {
		if err := k8sClient.Delete(ctx, &cur); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("deleting Secret %s: %v", name, err)
		}
		eventually(t, 30*time.Second, name+" to be gone", func() error {
			err := k8sClient.Get(ctx, client.ObjectKeyFromObject(&cur), &cur)
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there: %v", err)
		})
		exists = false
	}
	if want == nil {
		return
	}
	if !exists {
		s := want.DeepCopy()
		s.ResourceVersion = ""
		if err := k8sClient.Create(ctx, s); err != nil {
			t.Fatalf("creating Secret %s: %v", name, err)
		}
		return
	}
	cur.Data = want.Data
	if err := k8sClient.Update(ctx, &cur); err != nil {
		t.Fatalf("updating Secret %s: %v", name, err)
	}
}
