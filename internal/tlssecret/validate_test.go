package tlssecret

import (
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gomomento/valkey-operator/internal/testcerts"
)

const (
	cluster    = "my-cluster"
	namespace  = "my-app"
	secretName = "my-cluster-tls"
	domain     = "cluster.local"
	service    = "my-cluster.my-app.svc.cluster.local"
	wildcard   = "*.my-cluster.my-app.svc.cluster.local"
)

func TestRequiredSANs(t *testing.T) {
	got := requiredSANs(cluster, namespace, "")
	if len(got) != 2 || got[0] != service || got[1] != wildcard {
		t.Fatalf("requiredSANs = %q", got)
	}
	got = requiredSANs("c", "n", "example.internal")
	if got[0] != "c.n.svc.example.internal" || got[1] != "*.c.n.svc.example.internal" {
		t.Fatalf("requiredSANs with domain = %q", got)
	}
}

func TestValidate(t *testing.T) {
	ca := testcerts.NewCA("test-ca")
	otherCA := testcerts.NewCA("other-ca")
	inter := ca.Intermediate("test-intermediate")
	now := time.Now()

	leaf := func(opts ...testcerts.LeafOption) *testcerts.LeafCert {
		return testcerts.Leaf(ca, cluster, namespace, domain, opts...)
	}
	good := leaf()
	secret := func(l *testcerts.LeafCert, caBundle ...[]byte) *corev1.Secret {
		return testcerts.Secret(secretName, namespace, l, caBundle...)
	}
	// with returns the good Secret with one key replaced, or removed when
	// value is nil.
	with := func(key string, value []byte) *corev1.Secret {
		s := secret(good)
		if value == nil {
			delete(s.Data, key)
		} else {
			s.Data[key] = value
		}
		return s
	}
	pemOf := func(typ string, der []byte) []byte {
		return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
	}
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	p256Params := pemOf("EC PARAMETERS", []byte{0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07})

	noSANs := secret(leaf(testcerts.WithDNSNames()))
	noSANsNoCA := secret(leaf(testcerts.WithDNSNames()))
	delete(noSANsNoCA.Data, KeyCA)
	noSANsBadKey := secret(leaf(testcerts.WithDNSNames()))
	noSANsBadKey.Data[KeyPrivateKey] = good.KeyPEM
	opaque := secret(good)
	opaque.Type = corev1.SecretTypeOpaque
	interLeaf := testcerts.Leaf(inter, cluster, namespace, domain)
	interLeafNoChain := secret(interLeaf)
	interLeafNoChain.Data[KeyCert] = pemOf("CERTIFICATE", interLeaf.Cert.Raw)
	selfSigned := testcerts.NewCA("self")
	// A leaf older than its CA certificate, as after re-issuing a CA with
	// the same key: valid only between the CA's notBefore and the leaf's
	// notAfter, which is not the leaf's notBefore.
	lateCA := testcerts.NewCA("late-ca", testcerts.CAValidity(now.Add(-time.Hour), now.AddDate(1, 0, 0)))
	earlyLeaf := testcerts.Leaf(lateCA, cluster, namespace, domain,
		testcerts.WithValidity(now.AddDate(0, 0, -10), now.AddDate(0, 0, 10)))

	tests := []struct {
		name   string
		secret *corev1.Secret
		domain string
		reason string
		msg    string
	}{
		// 1
		{name: "not found", secret: nil,
			reason: ReasonSecretNotFound, msg: `TLS Secret "my-cluster-tls" not found in namespace "my-app"`},
		// 2
		{name: "nil data", secret: &corev1.Secret{},
			reason: ReasonSecretEmpty, msg: `TLS Secret "my-cluster-tls" has no data`},
		{name: "empty data", secret: &corev1.Secret{Data: map[string][]byte{}},
			reason: ReasonSecretEmpty, msg: `TLS Secret "my-cluster-tls" has no data`},
		// 3
		{name: "missing tls.crt", secret: with(KeyCert, nil),
			reason: ReasonMissingKey, msg: `TLS Secret "my-cluster-tls" missing required key "tls.crt"`},
		{name: "missing tls.key", secret: with(KeyPrivateKey, nil),
			reason: ReasonMissingKey, msg: `TLS Secret "my-cluster-tls" missing required key "tls.key"`},
		{name: "missing ca.crt", secret: with(KeyCA, nil),
			reason: ReasonMissingKey, msg: `TLS Secret "my-cluster-tls" missing required key "ca.crt"`},
		{name: "empty ca.crt counts as missing", secret: with(KeyCA, []byte{}),
			reason: ReasonMissingKey, msg: `TLS Secret "my-cluster-tls" missing required key "ca.crt"`},
		{name: "only ca.crt names tls.crt first",
			secret: &corev1.Secret{Data: map[string][]byte{KeyCA: ca.CertPEM}},
			reason: ReasonMissingKey, msg: `TLS Secret "my-cluster-tls" missing required key "tls.crt"`},
		{name: "missing key wins over missing SAN", secret: noSANsNoCA,
			reason: ReasonMissingKey, msg: `TLS Secret "my-cluster-tls" missing required key "ca.crt"`},
		// 4
		{name: "tls.crt not PEM", secret: with(KeyCert, []byte("not a certificate")),
			reason: ReasonCertNotPEM, msg: `TLS Secret "my-cluster-tls": tls.crt is not valid PEM`},
		{name: "tls.crt DER not PEM", secret: with(KeyCert, good.Cert.Raw),
			reason: ReasonCertNotPEM, msg: `TLS Secret "my-cluster-tls": tls.crt is not valid PEM`},
		// 5
		{name: "tls.crt garbage in PEM", secret: with(KeyCert, pemOf("CERTIFICATE", []byte("junk"))),
			reason: ReasonCertNotX509, msg: `TLS Secret "my-cluster-tls": tls.crt is not a valid X.509 certificate`},
		{name: "tls.crt holds the key", secret: with(KeyCert, good.KeyPEM),
			reason: ReasonCertNotX509, msg: `TLS Secret "my-cluster-tls": tls.crt is not a valid X.509 certificate`},
		{name: "tls.crt first block not the leaf", secret: with(KeyCert, cat(good.KeyPEM, good.CertPEM)),
			reason: ReasonCertNotX509, msg: `TLS Secret "my-cluster-tls": tls.crt is not a valid X.509 certificate`},
		// 6
		{name: "no SANs names the service first", secret: noSANs,
			reason: ReasonMissingSAN, msg: `TLS cert in Secret "my-cluster-tls" missing SAN "my-cluster.my-app.svc.cluster.local"`},
		{name: "only wildcard", secret: secret(leaf(testcerts.WithDNSNames(wildcard))),
			reason: ReasonMissingSAN, msg: `TLS cert in Secret "my-cluster-tls" missing SAN "my-cluster.my-app.svc.cluster.local"`},
		{name: "only service", secret: secret(leaf(testcerts.WithDNSNames(service))),
			reason: ReasonMissingSAN, msg: `TLS cert in Secret "my-cluster-tls" missing SAN "*.my-cluster.my-app.svc.cluster.local"`},
		{name: "wrong namespace", secret: secret(testcerts.Leaf(ca, cluster, "other", domain)),
			reason: ReasonMissingSAN, msg: `TLS cert in Secret "my-cluster-tls" missing SAN "my-cluster.my-app.svc.cluster.local"`},
		{name: "other cluster domain", secret: secret(good), domain: "example.internal",
			reason: ReasonMissingSAN, msg: `TLS cert in Secret "my-cluster-tls" missing SAN "my-cluster.my-app.svc.example.internal"`},
		{name: "missing SAN wins over key mismatch", secret: noSANsBadKey,
			reason: ReasonMissingSAN, msg: `TLS cert in Secret "my-cluster-tls" missing SAN "my-cluster.my-app.svc.cluster.local"`},
		// 7
		{name: "key of another cert", secret: with(KeyPrivateKey, leaf().KeyPEM),
			reason: ReasonKeyMismatch, msg: `TLS Secret "my-cluster-tls": tls.key does not match tls.crt`},
		{name: "RSA key for ECDSA cert", secret: with(KeyPrivateKey, leaf(testcerts.WithKeyType(testcerts.RSA2048)).KeyPEM),
			reason: ReasonKeyMismatch, msg: `TLS Secret "my-cluster-tls": tls.key does not match tls.crt`},
		{name: "key not PEM", secret: with(KeyPrivateKey, []byte("secret")),
			reason: ReasonKeyMismatch, msg: `TLS Secret "my-cluster-tls": tls.key does not match tls.crt`},
		{name: "key garbage in PEM", secret: with(KeyPrivateKey, pemOf("PRIVATE KEY", []byte("junk"))),
			reason: ReasonKeyMismatch, msg: `TLS Secret "my-cluster-tls": tls.key does not match tls.crt`},
		{name: "encrypted key", secret: with(KeyPrivateKey, pemOf("ENCRYPTED PRIVATE KEY", []byte("junk"))),
			reason: ReasonKeyMismatch, msg: `TLS Secret "my-cluster-tls": tls.key does not match tls.crt`},
		{name: "certificate in tls.key", secret: with(KeyPrivateKey, good.CertPEM),
			reason: ReasonKeyMismatch, msg: `TLS Secret "my-cluster-tls": tls.key does not match tls.crt`},
		// 8
		{name: "ca.crt not PEM", secret: with(KeyCA, []byte("not a CA")),
			reason: ReasonCANotPEM, msg: `TLS Secret "my-cluster-tls": ca.crt is not valid PEM`},
		{name: "ca.crt garbage certificate", secret: with(KeyCA, pemOf("CERTIFICATE", []byte("junk"))),
			reason: ReasonCANotPEM, msg: `TLS Secret "my-cluster-tls": ca.crt is not valid PEM`},
		{name: "ca.crt holds a key", secret: with(KeyCA, ca.KeyPEM),
			reason: ReasonCANotPEM, msg: `TLS Secret "my-cluster-tls": ca.crt is not valid PEM`},
		// 9
		{name: "signed by another CA", secret: secret(good, otherCA.CertPEM),
			reason: ReasonCertNotSignedByCA, msg: `TLS Secret "my-cluster-tls": tls.crt is not signed by a CA in ca.crt`},
		{name: "intermediate missing from tls.crt", secret: interLeafNoChain,
			reason: ReasonCertNotSignedByCA, msg: `TLS Secret "my-cluster-tls": tls.crt is not signed by a CA in ca.crt`},
		{name: "intermediate alone is no root", secret: secret(good, inter.CertPEM),
			reason: ReasonCertNotSignedByCA, msg: `TLS Secret "my-cluster-tls": tls.crt is not signed by a CA in ca.crt`},

		// Valid.
		{name: "valid", secret: secret(good)},
		{name: "valid with custom domain", domain: "example.internal",
			secret: secret(testcerts.Leaf(ca, cluster, namespace, "example.internal"))},
		{name: "SANs compare case-insensitively",
			secret: secret(leaf(testcerts.WithDNSNames("MY-CLUSTER.my-app.svc.cluster.local", "*.My-Cluster.my-app.svc.cluster.local")))},
		{name: "extra SANs are fine",
			secret: secret(leaf(testcerts.WithDNSNames("a.example", service, "b.example", wildcard)))},
		{name: "Opaque type is accepted", secret: opaque},
		{name: "RSA PKCS#1", secret: secret(leaf(testcerts.WithKeyType(testcerts.RSA2048)))},
		{name: "RSA PKCS#8", secret: secret(leaf(testcerts.WithKeyType(testcerts.RSA2048), testcerts.WithKeyEncoding(testcerts.PKCS8)))},
		{name: "ECDSA SEC1", secret: secret(leaf(testcerts.WithKeyType(testcerts.ECDSAP256)))},
		{name: "ECDSA PKCS#8", secret: secret(leaf(testcerts.WithKeyEncoding(testcerts.PKCS8)))},
		{name: "Ed25519", secret: secret(leaf(testcerts.WithKeyType(testcerts.Ed25519)))},
		{name: "EC PARAMETERS before the key", secret: with(KeyPrivateKey, cat(p256Params, good.KeyPEM))},
		{name: "ca.crt bundle old and new", secret: secret(good, otherCA.CertPEM, ca.CertPEM)},
		{name: "ca.crt junk block then CA", secret: with(KeyCA, cat(pemOf("CERTIFICATE", []byte("junk")), ca.CertPEM))},
		{name: "intermediate in tls.crt", secret: secret(interLeaf)},
		{name: "expired leaf still valid",
			secret: secret(leaf(testcerts.WithValidity(now.AddDate(0, 0, -90), now.AddDate(0, 0, -1))))},
		{name: "not yet valid leaf still valid",
			secret: secret(leaf(testcerts.WithValidity(now.AddDate(0, 0, 1), now.AddDate(0, 0, 90))))},
		{name: "leaf older than its CA certificate", secret: secret(earlyLeaf)},
		{name: "expired CA still valid", secret: secret(testcerts.Leaf(
			testcerts.NewCA("old", testcerts.CAValidity(now.AddDate(-3, 0, 0), now.AddDate(-1, 0, 0))),
			cluster, namespace, domain,
			testcerts.WithValidity(now.AddDate(-2, 0, 0), now.AddDate(-1, 0, -1))))},
		{name: "no EKU", secret: secret(leaf(testcerts.WithExtKeyUsages()))},
		{name: "wrong EKU is only a warning",
			secret: secret(leaf(testcerts.WithExtKeyUsages(x509.ExtKeyUsageCodeSigning)))},
		{name: "self-signed leaf trusted as its own CA",
			secret: secret(testcerts.Leaf(selfSigned, cluster, namespace, domain), selfSigned.CertPEM)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := Validate(Input{
				ClusterName:   cluster,
				Namespace:     namespace,
				ClusterDomain: tc.domain,
				SecretName:    secretName,
				Secret:        tc.secret,
			})
			switch {
			case tc.reason == "" && f != nil:
				t.Fatalf("want valid, got %s: %s", f.Reason, f.Message)
			case tc.reason == "":
			case f == nil:
				t.Fatalf("want %s, got valid", tc.reason)
			case f.Reason != tc.reason || f.Message != tc.msg:
				t.Fatalf("got  %s: %s\nwant %s: %s", f.Reason, f.Message, tc.reason, tc.msg)
			}
		})
	}
}

func TestFailureIsError(t *testing.T) {
	var err error = Validate(Input{SecretName: "s", Namespace: "n"})
	if err == nil || err.Error() != `TLS Secret "s" not found in namespace "n"` {
		t.Fatalf("err = %v", err)
	}
}
