package e2e

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gomomento/valkey-operator/internal/kubectlvalkey"
	"github.com/gomomento/valkey-operator/internal/testcerts"
)

// The plugin, run in-process with the kubeconfig a user would have and the
// runtime's pod network, proves a healthy TLS cluster and names the check
// that catches a wrong CA or a plaintext endpoint.
func TestKubectlValkey(t *testing.T) {
	t.Parallel()
	f := newTLSCluster(t, "kubectl-valkey", testcerts.NewCA("kubectl-valkey-ca"), 1, 1)
	run := func(t *testing.T, args ...string) (string, error) {
		t.Helper()
		var stdout, stderr strings.Builder
		args = append(args, "-n", f.ns, "--kubeconfig", local.Kubeconfig)
		err := kubectlvalkey.Run(context.Background(), args, kubectlvalkey.Env{
			Stdout:   &stdout,
			Stderr:   &stderr,
			Dialer:   local.Runtime.DialContext,
			Resolver: local.Runtime.LookupHostContext,
		})
		t.Logf("kubectl valkey %s:\n%s%s", strings.Join(args, " "), stdout.String(), stderr.String())
		return stdout.String(), err
	}
	wantFirstFailure := func(t *testing.T, err error, check string) {
		t.Helper()
		var ce *kubectlvalkey.CheckError
		if !errors.As(err, &ce) || ce.Check != check {
			t.Fatalf("err = %v, want check %s to fail first", err, check)
		}
		if kubectlvalkey.ExitCode(err) == 0 {
			t.Fatalf("exit code 0 for %v", err)
		}
	}

	t.Run("verify-tls passes on a healthy cluster", func(t *testing.T) {
		out, err := run(t, "verify-tls", f.name)
		if err != nil {
			t.Fatalf("verify-tls: %v", err)
		}
		want := []string{
			"ok   " + kubectlvalkey.CheckTLSPing + ": PONG over TLS",
			"ok   " + kubectlvalkey.CheckPlaintextRefused,
			"ok   " + kubectlvalkey.CheckSystemRootsRejected,
			"ok   " + kubectlvalkey.CheckOtherCARejected,
			"all 6 checks passed",
		}
		for _, pod := range f.podNames() {
			want = append(want, "ok   "+kubectlvalkey.CheckNodePrefix+pod+":")
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q", w)
			}
		}
		if strings.Count(out, "same as tls.crt in Secret "+f.secret) != 2 {
			t.Errorf("want both nodes serving the Secret's tls.crt")
		}
	})

	t.Run("verify-tls fails on a wrong CA", func(t *testing.T) {
		caFile := filepath.Join(t.TempDir(), "other-ca.crt")
		if err := os.WriteFile(caFile, testcerts.NewCA("unrelated-ca").CertPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := run(t, "verify-tls", f.name, "--ca", caFile)
		wantFirstFailure(t, err, kubectlvalkey.CheckTLSPing)
		if !strings.Contains(out, "certificate signed by unknown authority") {
			t.Errorf("the failure does not say why")
		}
	})

	t.Run("verify-tls fails on a plaintext endpoint", func(t *testing.T) {
		addr := plaintextPONG(t)
		out, err := run(t, "verify-tls", f.name, "--address", addr)
		wantFirstFailure(t, err, kubectlvalkey.CheckTLSPing)
		if !strings.Contains(out, "FAIL "+kubectlvalkey.CheckPlaintextRefused+": "+addr+` answered "+PONG" in plaintext`) {
			t.Errorf("the plaintext PONG is not reported")
		}
	})

	// The password reaches Valkey's AUTH from a file, never from argv: a
	// user that does not exist is refused by the server, after the
	// handshake verified.
	t.Run("verify-tls authenticates with --password-file", func(t *testing.T) {
		pwFile := filepath.Join(t.TempDir(), "password")
		if err := os.WriteFile(pwFile, []byte("not-alices-password\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := run(t, "verify-tls", f.name, "--user", "alice", "--password-file", pwFile)
		wantFirstFailure(t, err, kubectlvalkey.CheckTLSPing)
		if !strings.Contains(out, "ACL problem, not TLS: the handshake verified, then AUTH was refused") {
			t.Errorf("the refused AUTH is not reported")
		}
		_, err = run(t, "verify-tls", f.name, "--user", "alice", "--password", "not-alices-password")
		if kubectlvalkey.ExitCode(err) != 2 || !strings.Contains(err.Error(), "use --password-file FILE or $"+kubectlvalkey.EnvPassword) {
			t.Fatalf("--password on the command line: %v, want a usage error", err)
		}
	})

	t.Run("status", func(t *testing.T) {
		out, err := run(t, "status", f.name)
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		for _, w := range []string{"State:        Active", "Slots:        16384/16384 assigned", "Serving:      2/2 nodes", "CertificatesServed"} {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q", w)
			}
		}
		for _, pod := range f.podNames() {
			if !strings.Contains(out, pod) {
				t.Errorf("output lacks node %s", pod)
			}
		}
	})
}

// plaintextPONG listens on loopback and answers anything with +PONG, as a
// Valkey port that accepts plaintext would.
func plaintextPONG(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 1024)
			if _, err := conn.Read(buf); err == nil {
				_, _ = conn.Write([]byte("+PONG\r\n"))
			}
			conn.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}
