package valkey

import (
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gomomento/valkey-operator/internal/testcerts"
)

// podFQDN is the name the operator verifies a pod's certificate against;
// the test leaf covers it through the *.test.ns.svc.cluster.local SAN.
const podFQDN = "node-0.test.ns.svc.cluster.local"

type testPKI struct {
	ca   *testcerts.CA
	leaf *testcerts.LeafCert
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	ca := testcerts.NewCA("valkey-test-ca")
	return testPKI{ca: ca, leaf: testcerts.Leaf(ca, "test", "ns", "cluster.local")}
}

// writeTLSFiles puts the material where the server reads it, replacing
// each file by rename as the kubelet's atomic writer does.
func writeTLSFiles(t *testing.T, dir string, leaf *testcerts.LeafCert, caPEM []byte) {
	t.Helper()
	for name, data := range map[string][]byte{"tls.crt": leaf.CertPEM, "tls.key": leaf.KeyPEM, "ca.crt": caPEM} {
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTLSAgainstRealServer(t *testing.T) {
	argv := valkeyArgv(t)
	pki := newTestPKI(t)
	tlsDir := t.TempDir()
	writeTLSFiles(t, tlsDir, pki.leaf, pki.ca.CertPEM)
	certFile, keyFile, caFile := filepath.Join(tlsDir, "tls.crt"), filepath.Join(tlsDir, "tls.key"), filepath.Join(tlsDir, "ca.crt")
	s := startServer(t, argv, "tls-port",
		"tls-cert-file "+certFile,
		"tls-key-file "+keyFile,
		"tls-ca-cert-file "+caFile,
		"tls-auth-clients no",
	)
	ctx := testCtx(t)
	target := s.operatorTarget()
	target.TLS = &TLS{CA: pki.ca.CertPEM, ServerName: podFQDN}

	node := dialT(t, target)
	if err := node.Ping(ctx); err != nil {
		t.Fatal(err)
	}

	t.Run("wrong CA", func(t *testing.T) {
		bad := target
		bad.TLS = &TLS{CA: testcerts.NewCA("other-ca").CertPEM, ServerName: podFQDN}
		n, err := Dial(ctx, bad)
		if err == nil {
			n.Close()
			t.Fatal("Dial trusted a certificate from another CA")
		}
		var unknown x509.UnknownAuthorityError
		if !errors.As(err, &unknown) || !strings.Contains(err.Error(), "verify certificate") {
			t.Fatalf("want a certificate verification error, got %v", err)
		}
		if _, err := ServedCertificate(ctx, bad); !errors.As(err, &unknown) {
			t.Fatalf("ServedCertificate with the wrong CA: want a verification error, got %v", err)
		}
	})

	t.Run("server name not in SANs", func(t *testing.T) {
		bad := target
		bad.TLS = &TLS{CA: pki.ca.CertPEM, ServerName: "node-0.other.ns.svc.cluster.local"}
		n, err := Dial(ctx, bad)
		if err == nil {
			n.Close()
			t.Fatal("Dial accepted a certificate for another name")
		}
		var hostErr x509.HostnameError
		if !errors.As(err, &hostErr) {
			t.Fatalf("want a hostname error, got %v", err)
		}
	})

	t.Run("plaintext asked of a TLS server", func(t *testing.T) {
		plain := target
		plain.TLS = nil
		plain.Timeout = 500 * time.Millisecond
		if n, err := Dial(ctx, plain); err == nil {
			n.Close()
			t.Fatal("plaintext Dial succeeded against a TLS-only server")
		}
	})

	t.Run("served certificate follows a reload", func(t *testing.T) {
		chain, err := ServedCertificate(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		if !chain[0].Equal(pki.leaf.Cert) {
			t.Fatalf("served %s, want the first leaf", chain[0].Subject)
		}

		next := testcerts.Leaf(pki.ca, "test", "ns", "cluster.local")
		writeTLSFiles(t, tlsDir, next, pki.ca.CertPEM)
		// New files alone change nothing: the server keeps its TLS context.
		if chain, err = ServedCertificate(ctx, target); err != nil || !chain[0].Equal(pki.leaf.Cert) {
			t.Fatalf("before CONFIG SET: served a different certificate or failed: %v", err)
		}
		// The operator user's +config|set is enough for the reload.
		if err := node.ConfigSet(ctx, "tls-cert-file", certFile, "tls-key-file", keyFile, "tls-ca-cert-file", caFile); err != nil {
			t.Fatal(err)
		}
		if chain, err = ServedCertificate(ctx, target); err != nil || !chain[0].Equal(next.Cert) {
			t.Fatalf("after CONFIG SET: want the new leaf, err %v", err)
		}
		// The connection opened before the reload keeps working.
		if err := node.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
