package nodeimages

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gomomento/valkey-operator/internal/testcerts"
)

func TestClientImage(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/usr/bin/valkey-cli", "/usr/bin/openssl"} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("no %s installed (make valkey)", p)
		}
	}
	ctx := context.Background()
	spec := Client()
	built := buildTwice(t, func(out string) (Image, error) { return BuildClient(ctx, spec, out) })
	if built.FullName != spec.Name {
		t.Errorf("full name %q, want %q (a local registry name is kept as it is)", built.FullName, spec.Name)
	}
	img := readArchive(t, built)
	cf := configOf(t, img)
	wantConfig(t, cf, nil, []string{"sleep", "infinity"}, ClientUser, "/home/nonroot")
	dir := unpack(t, img)
	for _, p := range clientPrograms {
		wantLibraries(t, "/", p, dir, lddList(t, p))
	}
	if fileSum(t, resolveIn(t, dir, "/usr/lib/ssl/cert.pem")) != fileSum(t, caBundle) {
		t.Errorf("OpenSSL's default CA file is not the system trust store %s", caBundle)
	}
	if os.Geteuid() != 0 {
		t.Log("not root: no chroot checks")
		return
	}
	// As a client pod runs it: the image's user, the commands on PATH,
	// one openssl piped into the other as the TLS page does. The
	// certificate read is one the test wrote into the tree; a chroot has no
	// /dev, so none of the page's redirections.
	ca := testcerts.NewCA("client-image-ca")
	leaf := testcerts.Leaf(ca, "my-cluster", "my-app", "cluster.local")
	if err := os.WriteFile(filepath.Join(dir, "tmp", "tls.crt"), leaf.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := runIn(t, dir, 65532, 65532, "/bin/sh", "-c", "valkey-cli --version"); !strings.Contains(out, "valkey-cli "+spec.Version) {
		t.Errorf("valkey-cli --version in a chroot: %s", out)
	}
	out := runIn(t, dir, 65532, 65532, "/bin/sh", "-c", "openssl x509 -in /tmp/tls.crt | openssl x509 -noout -enddate -subject")
	if !strings.Contains(out, "notAfter=") || !strings.Contains(out, "subject=CN = my-cluster.my-app") {
		t.Errorf("openssl x509 -noout -enddate -subject in a chroot: %q", out)
	}
	// The system trust store does not hold the test's CA: verification
	// fails as the TLS page says a client without --cacert must.
	cmd := exec.Command("/usr/bin/openssl", "verify", "/tmp/tls.crt")
	cmd.Env = []string{defaultPath}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: dir, Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
	if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "unable to get local issuer certificate") {
		t.Errorf("openssl verify of a certificate from a private CA against the system trust store: %v: %s", err, b)
	}
}
