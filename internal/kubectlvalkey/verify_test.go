package kubectlvalkey

import (
	"context"
	"crypto/x509"
	"errors"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gomomento/valkey-operator/internal/testcerts"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
)

// TestVerify runs verify-tls against fake nodes behind a fake pod network:
// pod cache-a at 10.0.0.1, pod cache-b at 10.0.0.2, the Service name
// resolving to cache-a.
func TestVerify(t *testing.T) {
	ca := testcerts.NewCA("cluster-ca")
	other := testcerts.NewCA("other-ca")
	leaf := testcerts.Leaf(ca, testCluster, testNS, "cluster.local")
	renewed := testcerts.Leaf(ca, testCluster, testNS, "cluster.local")
	foreign := testcerts.Leaf(other, testCluster, testNS, "cluster.local")
	trustingCA := x509.NewCertPool()
	trustingCA.AddCert(ca.Cert)

	type setup struct {
		modeA, modeB serverMode
		leafB        *testcerts.LeafCert
		password     string
		noResolve    bool
		noIPB        bool
		plainCluster bool
	}
	cases := []struct {
		name  string
		setup setup
		// tweak adjusts the verifier; addrs has "a", "b" and "plain" (a
		// plaintext server answering +PONG).
		tweak     func(v *verifier, addrs map[string]string)
		wantFirst string // "" for success
		wantErr   string // a non-check error
		wantOut   []string
	}{
		{
			name: "healthy",
			wantOut: []string{
				"ok   tls-ping: PONG over TLS from 10.0.0.1:6379, verified as " + testService,
				"ok   plaintext-refused:",
				"ok   system-roots-rejected: trusting only the system trust store, the handshake fails",
				"ok   other-ca-rejected: trusting only a freshly generated CA, the handshake fails",
				"ok   node/cache-a: 10.0.0.1:6379 serves a certificate verified as cache-a.cache.app.svc.cluster.local",
				"ok   node/cache-b:",
				"sha256    " + tlssecret.Fingerprint(leaf.Cert.Raw),
				"same as tls.crt in Secret cache-tls",
				"all 6 checks passed",
			},
		},
		{
			name:      "wrong CA given with --ca",
			tweak:     func(v *verifier, _ map[string]string) { v.CA = other.CertPEM },
			wantFirst: CheckTLSPing,
			wantOut: []string{
				"FAIL tls-ping: TLS handshake with 10.0.0.1:6379 as \"" + testService + "\"",
				"ok   other-ca-rejected",
				"FAIL node/cache-a:",
				"served, unverified:",
			},
		},
		{
			name:      "address of a plaintext server",
			tweak:     func(v *verifier, addrs map[string]string) { v.Address = addrs["plain"] },
			wantFirst: CheckTLSPing,
			wantOut: []string{
				"FAIL tls-ping:",
				"FAIL plaintext-refused:",
				"in plaintext: the port accepts unencrypted connections",
				"ok   nodes: skipped",
			},
		},
		{
			name:      "plaintext accepted beside TLS",
			setup:     setup{modeA: modeBoth},
			wantFirst: CheckPlaintextRefused,
			wantOut:   []string{"ok   tls-ping", `FAIL plaintext-refused: 10.0.0.1:6379 answered "+PONG" in plaintext`},
		},
		{
			name:      "a client without --cacert trusts the CA",
			tweak:     func(v *verifier, _ map[string]string) { v.SystemRoots = trustingCA },
			wantFirst: CheckSystemRootsRejected,
			wantOut:   []string{"FAIL system-roots-rejected: a client trusting only the system trust store accepted the certificate"},
		},
		{
			name:      "ACL bindings and no credentials",
			setup:     setup{password: "s3cret"},
			wantFirst: CheckTLSPing,
			wantOut:   []string{`FAIL tls-ping: ACL problem, not TLS: the handshake verified, then PING got "-NOAUTH`},
		},
		{
			name:      "wrong password",
			setup:     setup{password: "s3cret"},
			tweak:     func(v *verifier, _ map[string]string) { v.User, v.Password = "alice", "wrong" },
			wantFirst: CheckTLSPing,
			wantOut:   []string{`FAIL tls-ping: ACL problem, not TLS: the handshake verified, then AUTH was refused with "-WRONGPASS`},
		},
		{
			name:    "right password",
			setup:   setup{password: "s3cret"},
			tweak:   func(v *verifier, _ map[string]string) { v.User, v.Password = "alice", "s3cret" },
			wantOut: []string{"ok   tls-ping: PONG", "all 6 checks passed"},
		},
		{
			name:  "a node still serves the previous leaf",
			setup: setup{leafB: renewed},
			wantOut: []string{
				"ok   node/cache-b:",
				"WARN node/cache-b: serves a certificate other than tls.crt in Secret cache-tls",
				"all 6 checks passed",
			},
		},
		{
			name:      "a node serves a certificate from another CA",
			setup:     setup{leafB: foreign},
			wantFirst: CheckNodePrefix + "cache-b",
			wantOut: []string{
				"ok   node/cache-a",
				"FAIL node/cache-b: 10.0.0.2:6379 as cache-b.cache.app.svc.cluster.local",
				"issuer    CN=other-ca",
			},
		},
		{
			name:    "the Service name does not resolve",
			setup:   setup{noResolve: true},
			wantOut: []string{"dialing 10.0.0.1:6379 (pod cache-a directly: the Service name does not resolve here", "all 6 checks passed"},
		},
		{
			name:      "a pod without an IP",
			setup:     setup{noIPB: true},
			wantFirst: CheckNodePrefix + "cache-b",
			wantOut:   []string{"FAIL node/cache-b: pod has no IP (phase Running)"},
		},
		{
			name:    "a plaintext cluster",
			setup:   setup{plainCluster: true},
			wantErr: "has no spec.tls",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.setup
			leafB := leaf
			if s.leafB != nil {
				leafB = s.leafB
			}
			a := startFake(t, s.modeA, leaf, s.password)
			b := startFake(t, s.modeB, leafB, s.password)
			plain := startFake(t, modePlaintext, nil, "")

			vc := tlsCluster()
			if s.plainCluster {
				vc.Spec.TLS = nil
			}
			ipB := "10.0.0.2"
			if s.noIPB {
				ipB = ""
			}
			objs := []client.Object{vc, testcerts.Secret(testSecret, testNS, leaf), pod("cache-a", "10.0.0.1"), pod("cache-b", ipB)}
			dns := map[string][]string{testService: {"10.0.0.1", "10.0.0.2"}}
			if s.noResolve {
				dns = nil
			}
			var out strings.Builder
			v := &verifier{
				Client:    fakeClient(t, objs...),
				Namespace: testNS,
				Cluster:   testCluster,
				Dialer:    routes(map[string]string{"10.0.0.1:6379": a.addr(), "10.0.0.2:6379": b.addr()}),
				Resolver:  resolves(dns),
				Timeout:   2 * time.Second,
				Out:       &out,
			}
			if tc.tweak != nil {
				tc.tweak(v, map[string]string{"a": a.addr(), "b": b.addr(), "plain": plain.addr()})
			}
			err := v.verify(context.Background())

			var ce *CheckError
			switch {
			case tc.wantErr != "":
				if err == nil || errors.As(err, &ce) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want a setup error containing %q", err, tc.wantErr)
				}
			case tc.wantFirst == "":
				if err != nil {
					t.Fatalf("err = %v\n%s", err, out.String())
				}
			default:
				if !errors.As(err, &ce) || ce.Check != tc.wantFirst {
					t.Fatalf("err = %v, want check %s to fail first\n%s", err, tc.wantFirst, out.String())
				}
			}
			for _, want := range tc.wantOut {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

func TestThrowawayCATrustsNothingReal(t *testing.T) {
	pool, err := throwawayCA()
	if err != nil {
		t.Fatal(err)
	}
	leaf := testcerts.Leaf(testcerts.NewCA("cluster-ca"), testCluster, testNS, "cluster.local")
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: testService}); err == nil {
		t.Fatal("a leaf of another CA verified against the throwaway CA")
	}
}
