package nodeimages

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ClientUser is the client image's user: no valkey user, no root, so a pod
// of it passes the restricted Pod Security Standard as it is.
const ClientUser = "65532:65532"

// clientPrograms are what a client pod runs the TLS page's checks with:
// valkey-cli, openssl, and the shell and sleep that keep the pod idle for
// kubectl exec and pipe one openssl into the other.
var clientPrograms = []string{"/usr/bin/valkey-cli", "/usr/bin/openssl", "/usr/bin/dash", "/usr/bin/sleep"}

// clientFiles are what those programs read at their default paths:
// OpenSSL's configuration and the system trust store (through
// /usr/lib/ssl, OpenSSL's directory, as Debian links it), so a client
// given no --cacert verifies against the public CAs, as it would anywhere.
var clientFiles = []string{"/usr/lib/ssl/openssl.cnf", "/usr/lib/ssl/cert.pem", "/usr/lib/ssl/certs", caBundle}

// ClientSpec is a client image to build from this machine's valkey-cli and
// openssl.
type ClientSpec struct {
	// Name pods give the image.
	Name string
	// Version valkey-cli must report; the image is tagged with it.
	Version string
}

// Client is the image a client pod runs the TLS page's commands from:
// valkey-cli 8.0.1 from Debian's valkey-tools and Debian's openssl.
// localhost/ says it is built here and never pulled.
func Client() ClientSpec {
	return ClientSpec{Name: "localhost/valkey-client:8.0.1", Version: "8.0.1"}
}

// clientPasswd and clientGroup name the client user, as distroless's
// nonroot.
const (
	clientPasswd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	clientGroup = "root:x:0:\nnonroot:x:65532:\n"
)

// BuildClient builds the client image of spec and writes it under outDir.
func BuildClient(ctx context.Context, spec ClientSpec, outDir string) (Image, error) {
	is, err := clientImage(ctx, spec)
	if err != nil {
		return Image{}, err
	}
	img, err := assemble(is)
	if err != nil {
		return Image{}, err
	}
	return write(img, spec.Name, outDir)
}

func clientImage(ctx context.Context, spec ClientSpec) (imageSpec, error) {
	got, err := cliVersion(ctx, "/")
	if err != nil {
		return imageSpec{}, err
	}
	if got != spec.Version {
		return imageSpec{}, fmt.Errorf("%s: valkey-cli on this machine is %s, not %s", spec.Name, got, spec.Version)
	}
	t := newTree()
	if err := addPrograms(ctx, t, "/", clientPrograms); err != nil {
		return imageSpec{}, fmt.Errorf("%s: %w", spec.Name, err)
	}
	for _, f := range append([]string{"/bin/sh"}, clientFiles...) {
		if err := t.addFrom("/", f); err != nil {
			return imageSpec{}, fmt.Errorf("%s: %w", spec.Name, err)
		}
	}
	if err := addMergedUsr(t, "/"); err != nil {
		return imageSpec{}, fmt.Errorf("%s: %w", spec.Name, err)
	}
	for _, f := range []struct{ path, data string }{
		{"/etc/passwd", clientPasswd},
		{"/etc/group", clientGroup},
		{"/etc/nsswitch.conf", nsswitch},
	} {
		if err := t.file(f.path, 0o644, []byte(f.data)); err != nil {
			return imageSpec{}, err
		}
	}
	if err := t.dir("/tmp", 0o1777, 0, 0); err != nil {
		return imageSpec{}, err
	}
	if err := t.dir("/home/nonroot", 0o755, 65532, 65532); err != nil {
		return imageSpec{}, err
	}
	return imageSpec{
		name: spec.Name,
		tree: t,
		config: v1.Config{
			// Idle, for kubectl exec.
			Cmd:        []string{"sleep", "infinity"},
			Env:        []string{defaultPath, "HOME=/home/nonroot"},
			User:       ClientUser,
			WorkingDir: "/home/nonroot",
			Labels: map[string]string{
				"org.opencontainers.image.title":   "valkey-client",
				"org.opencontainers.image.version": spec.Version,
			},
		},
		history: "valkey-cli " + spec.Version + " from Debian's valkey-tools and openssl from Debian's openssl, with the libraries ldd lists",
	}, nil
}

var cliVersionRE = regexp.MustCompile(`^valkey-cli ([0-9][^ \n]*)`)

// cliVersion is what the tree's valkey-cli --version reports.
func cliVersion(ctx context.Context, root string) (string, error) {
	argv, err := LoaderCommand(root, "/usr/bin/valkey-cli")
	if err != nil {
		return "", err
	}
	argv = append(argv, "--version")
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, bytes.TrimSpace(out))
	}
	m := cliVersionRE.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("%s: no version in %q", strings.Join(argv, " "), out)
	}
	return string(m[1]), nil
}
