package tlssecret

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"reflect"
	"testing"
	"time"

	"github.com/gomomento/valkey-operator/internal/testcerts"
)

func TestInspect(t *testing.T) {
	root := testcerts.NewCA("test-root")
	inter := root.Intermediate("test-intermediate")
	other := testcerts.NewCA("other-root")
	leaf := testcerts.Leaf(inter, cluster, namespace, domain)
	secret := testcerts.Secret(secretName, namespace, leaf, testcerts.Bundle(other, root))

	info, err := Inspect(secretName, secret)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(leaf.Cert.Raw)
	want := CertInfo{
		Subject:      "CN=my-cluster.my-app",
		Issuer:       "CN=test-intermediate",
		DNSNames:     []string{service, wildcard},
		NotBefore:    leaf.Cert.NotBefore,
		NotAfter:     leaf.Cert.NotAfter,
		Fingerprint:  hex.EncodeToString(sum[:]),
		ExtKeyUsages: []string{"server auth", "client auth"},
	}
	if !reflect.DeepEqual(info.Leaf, want) {
		t.Errorf("leaf\ngot  %+v\nwant %+v", info.Leaf, want)
	}
	if info.SecretName != secretName {
		t.Errorf("SecretName = %q", info.SecretName)
	}
	if len(info.Intermediates) != 1 || info.Intermediates[0].Subject != "CN=test-intermediate" ||
		info.Intermediates[0].Fingerprint != Fingerprint(inter.Cert.Raw) || !info.Intermediates[0].IsCA {
		t.Errorf("intermediates = %+v", info.Intermediates)
	}
	if len(info.CAs) != 2 ||
		info.CAs[0].Subject != "CN=other-root" || info.CAs[0].Fingerprint != Fingerprint(other.Cert.Raw) ||
		info.CAs[1].Subject != "CN=test-root" || info.CAs[1].Fingerprint != Fingerprint(root.Cert.Raw) {
		t.Errorf("CAs = %+v", info.CAs)
	}
}

func TestInspectNoCertificate(t *testing.T) {
	if _, err := Inspect(secretName, nil); err != errNoCertificate {
		t.Errorf("nil Secret: err = %v", err)
	}
	s := testcerts.Secret(secretName, namespace, testcerts.Leaf(testcerts.NewCA("ca"), cluster, namespace, domain))
	s.Data[KeyCert] = []byte("junk")
	if _, err := Inspect(secretName, s); err != errNoCertificate {
		t.Errorf("junk tls.crt: err = %v", err)
	}
}

func TestFingerprint(t *testing.T) {
	// sha256("abc")
	const want = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if got := Fingerprint([]byte("abc")); got != want {
		t.Errorf("Fingerprint = %s", got)
	}
}

func TestWarnings(t *testing.T) {
	ca := testcerts.NewCA("test-ca")
	now := time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)
	valid := testcerts.WithValidity(now.AddDate(0, 0, -10), now.AddDate(0, 0, 80))
	validUntil := func(notAfter time.Time) testcerts.LeafOption {
		return testcerts.WithValidity(now.AddDate(0, 0, -10), notAfter)
	}
	serverOnly := `TLS cert in Secret "my-cluster-tls" lacks extended key usage "client auth": nodes cannot authenticate to peers, so the cluster bus and replication will fail`
	clientOnly := `TLS cert in Secret "my-cluster-tls" lacks extended key usage "server auth": peers and clients reject the certificate nodes serve, so the cluster bus, replication and client connections will fail`

	tests := []struct {
		name string
		opts []testcerts.LeafOption
		want []Warning
	}{
		{name: "clean", opts: []testcerts.LeafOption{valid}},
		{name: "no EKU extension means any usage",
			opts: []testcerts.LeafOption{valid, testcerts.WithExtKeyUsages()}},
		{name: "any usage",
			opts: []testcerts.LeafOption{valid, testcerts.WithExtKeyUsages(x509.ExtKeyUsageAny)}},
		{name: "server auth only",
			opts: []testcerts.LeafOption{valid, testcerts.WithExtKeyUsages(x509.ExtKeyUsageServerAuth)},
			want: []Warning{{ReasonMissingClientAuth, serverOnly}}},
		{name: "client auth only",
			opts: []testcerts.LeafOption{valid, testcerts.WithExtKeyUsages(x509.ExtKeyUsageClientAuth)},
			want: []Warning{{ReasonMissingServerAuth, clientOnly}}},
		{name: "neither",
			opts: []testcerts.LeafOption{valid, testcerts.WithExtKeyUsages(x509.ExtKeyUsageCodeSigning)},
			want: []Warning{{ReasonMissingServerAuth, clientOnly}, {ReasonMissingClientAuth, serverOnly}}},
		{name: "expires in 10 days",
			opts: []testcerts.LeafOption{validUntil(now.AddDate(0, 0, 10))},
			want: []Warning{{ReasonCertificateExpiringSoon,
				`TLS cert in Secret "my-cluster-tls" expires at 2030-06-11T12:00:00Z, within 30 days`}}},
		{name: "expires in exactly 30 days",
			opts: []testcerts.LeafOption{validUntil(now.Add(expiryWarning))},
			want: []Warning{{ReasonCertificateExpiringSoon,
				`TLS cert in Secret "my-cluster-tls" expires at 2030-07-01T12:00:00Z, within 30 days`}}},
		{name: "expires in 30 days and a second",
			opts: []testcerts.LeafOption{validUntil(now.Add(expiryWarning + time.Second))}},
		{name: "expires now",
			opts: []testcerts.LeafOption{validUntil(now)},
			want: []Warning{{ReasonCertificateExpiringSoon,
				`TLS cert in Secret "my-cluster-tls" expires at 2030-06-01T12:00:00Z, within 30 days`}}},
		{name: "expired",
			opts: []testcerts.LeafOption{validUntil(now.Add(-time.Second))},
			want: []Warning{{ReasonCertificateExpired,
				`TLS cert in Secret "my-cluster-tls" expired at 2030-06-01T11:59:59Z`}}},
		{name: "not yet valid",
			opts: []testcerts.LeafOption{testcerts.WithValidity(now.Add(time.Hour), now.AddDate(0, 0, 90))},
			want: []Warning{{ReasonCertificateNotYetValid,
				`TLS cert in Secret "my-cluster-tls" is not valid before 2030-06-01T13:00:00Z`}}},
		{name: "expired without client auth",
			opts: []testcerts.LeafOption{validUntil(now.AddDate(0, 0, -1)), testcerts.WithExtKeyUsages(x509.ExtKeyUsageServerAuth)},
			want: []Warning{{ReasonMissingClientAuth, serverOnly}, {ReasonCertificateExpired,
				`TLS cert in Secret "my-cluster-tls" expired at 2030-05-31T12:00:00Z`}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			leaf := testcerts.Leaf(ca, cluster, namespace, domain, tc.opts...)
			info, err := Inspect(secretName, testcerts.Secret(secretName, namespace, leaf))
			if err != nil {
				t.Fatal(err)
			}
			got := Warnings(info, now)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if got := Warnings(nil, now); got != nil {
		t.Errorf("Warnings(nil) = %v", got)
	}
}

func TestUsageNames(t *testing.T) {
	ca := testcerts.NewCA("test-ca")
	leaf := testcerts.Leaf(ca, cluster, namespace, domain, testcerts.WithExtKeyUsages(
		x509.ExtKeyUsageAny, x509.ExtKeyUsageOCSPSigning, x509.ExtKeyUsageMicrosoftCommercialCodeSigning))
	info, err := Inspect(secretName, testcerts.Secret(secretName, namespace, leaf))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"any", "ocsp signing", "x509.ExtKeyUsage(12)"}
	if !reflect.DeepEqual(info.Leaf.ExtKeyUsages, want) {
		t.Errorf("got %q, want %q", info.Leaf.ExtKeyUsages, want)
	}
}
