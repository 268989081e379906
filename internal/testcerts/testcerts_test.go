package testcerts

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestLeafVerifiesForPodName(t *testing.T) {
	ca := NewCA("test-ca")
	leaf := Leaf(ca, "c", "ns", "cluster.local")

	if want := []string{"c.ns.svc.cluster.local", "*.c.ns.svc.cluster.local"}; !reflect.DeepEqual(leaf.Cert.DNSNames, want) {
		t.Fatalf("DNSNames = %q", leaf.Cert.DNSNames)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := leaf.Cert.Verify(x509.VerifyOptions{
			DNSName:   "c-0-0.c.ns.svc.cluster.local",
			Roots:     roots,
			KeyUsages: []x509.ExtKeyUsage{usage},
		}); err != nil {
			t.Errorf("usage %v: %v", usage, err)
		}
	}
}

func TestKeyTypesLoadAsKeyPairs(t *testing.T) {
	ca := NewCA("test-ca")
	for _, tc := range []struct {
		name    string
		opts    []LeafOption
		pemType string
	}{
		{"ECDSA", nil, "EC PRIVATE KEY"},
		{"ECDSA PKCS#8", []LeafOption{WithKeyEncoding(PKCS8)}, "PRIVATE KEY"},
		{"RSA", []LeafOption{WithKeyType(RSA2048)}, "RSA PRIVATE KEY"},
		{"RSA PKCS#8", []LeafOption{WithKeyType(RSA2048), WithKeyEncoding(PKCS8)}, "PRIVATE KEY"},
		{"Ed25519", []LeafOption{WithKeyType(Ed25519)}, "PRIVATE KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaf := Leaf(ca, "c", "ns", "cluster.local", tc.opts...)
			if _, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM); err != nil {
				t.Fatal(err)
			}
			if block, _ := pem.Decode(leaf.KeyPEM); block == nil || block.Type != tc.pemType {
				t.Fatalf("key PEM type = %v, want %s", block, tc.pemType)
			}
		})
	}
}

func TestOptions(t *testing.T) {
	ca := NewCA("test-ca")
	nb := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	na := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	leaf := Leaf(ca, "c", "ns", "cluster.local",
		WithDNSNames("x.example"), WithExtKeyUsages(), WithValidity(nb, na))
	if !reflect.DeepEqual(leaf.Cert.DNSNames, []string{"x.example"}) {
		t.Errorf("DNSNames = %q", leaf.Cert.DNSNames)
	}
	if len(leaf.Cert.ExtKeyUsage) != 0 {
		t.Errorf("ExtKeyUsage = %v", leaf.Cert.ExtKeyUsage)
	}
	if !leaf.Cert.NotBefore.Equal(nb) || !leaf.Cert.NotAfter.Equal(na) {
		t.Errorf("validity = %v..%v", leaf.Cert.NotBefore, leaf.Cert.NotAfter)
	}
}

func TestIntermediateChain(t *testing.T) {
	root := NewCA("root")
	inter := root.Intermediate("inter")
	leaf := Leaf(inter, "c", "ns", "cluster.local")

	if inter.root() != root || root.root() != root {
		t.Fatal("root does not walk to the self-signed CA")
	}
	if want := append(append([]byte{}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Cert.Raw})...), inter.CertPEM...); !bytes.Equal(leaf.CertPEM, want) {
		t.Error("tls.crt is not leaf followed by the intermediate")
	}
	if der := leaf.DER(); len(der) != 2 || !bytes.Equal(der[1], inter.Cert.Raw) {
		t.Errorf("DER chain has %d certificates", len(der))
	}
	roots := x509.NewCertPool()
	roots.AddCert(root.Cert)
	inters := x509.NewCertPool()
	inters.AddCert(inter.Cert)
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inters}); err != nil {
		t.Fatal(err)
	}
}

func TestSecret(t *testing.T) {
	root := NewCA("root")
	other := NewCA("other")
	leaf := Leaf(root.Intermediate("inter"), "c", "ns", "cluster.local")

	s := Secret("c-tls", "ns", leaf)
	if s.Name != "c-tls" || s.Namespace != "ns" || s.Type != corev1.SecretTypeTLS {
		t.Errorf("meta = %s/%s type %s", s.Namespace, s.Name, s.Type)
	}
	if !bytes.Equal(s.Data["tls.crt"], leaf.CertPEM) || !bytes.Equal(s.Data["tls.key"], leaf.KeyPEM) {
		t.Error("tls.crt/tls.key do not hold the leaf")
	}
	if !bytes.Equal(s.Data["ca.crt"], root.CertPEM) {
		t.Error("default ca.crt is not the root")
	}

	s = Secret("c-tls", "ns", leaf, Bundle(other, root))
	if want := append(append([]byte{}, other.CertPEM...), root.CertPEM...); !bytes.Equal(s.Data["ca.crt"], want) {
		t.Error("ca.crt is not the bundle")
	}
}
