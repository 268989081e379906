package nodeimages

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Paths and user of the operator image, as the Dockerfile's: the binary
// at the root of gcr.io/distroless/static:nonroot, run as nonroot.
const (
	OperatorPath = "/valkey-operator"
	OperatorUser = "65532:65532"
	nonrootHome  = "/home/nonroot"
)

// OperatorSpec is the operator image to build from this repository.
type OperatorSpec struct {
	// Name pods give the image; config/manager and the chart's
	// default name gomomento/valkey-operator:latest.
	Name string
	// RepoRoot is the module to build ./cmd/valkey-operator in.
	RepoRoot string
	// Version is stamped into internal/version, as the Dockerfile's
	// VERSION build argument ("dev" when empty).
	Version string
}

// Operator is the image config/manager runs, built from the module at
// repoRoot.
func Operator(repoRoot string) OperatorSpec {
	return OperatorSpec{Name: "gomomento/valkey-operator:latest", RepoRoot: repoRoot, Version: "dev"}
}

// distroless static's accounts.
const (
	distrolessPasswd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	distrolessGroup = "root:x:0:\n" +
		"nobody:x:65534:\n" +
		"tty:x:5:\n" +
		"staff:x:50:\n" +
		"nonroot:x:65532:\n"
)

// BuildOperator builds cmd/valkey-operator the way the Dockerfile does
// (CGO_ENABLED=0, -trimpath, -s -w, the version stamped; no VCS stamp,
// as the Dockerfile's build context has no .git) and writes its image
// under outDir: the binary on a distroless-like static base.
func BuildOperator(ctx context.Context, spec OperatorSpec, outDir string) (Image, error) {
	dir, err := os.MkdirTemp("", "valkey-operator-build-")
	if err != nil {
		return Image{}, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "valkey-operator")
	if err := GoBuildOperator(ctx, spec, bin); err != nil {
		return Image{}, err
	}
	return OperatorImageFrom(spec, bin, outDir)
}

// GoBuildOperator builds the operator binary of spec at out.
func GoBuildOperator(ctx context.Context, spec OperatorSpec, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -X github.com/gomomento/valkey-operator/internal/version.Version="+spec.versionOrDev(),
		"-o", out, "./cmd/valkey-operator")
	cmd.Dir = spec.RepoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+Platform.OS, "GOARCH="+Platform.Architecture, "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/valkey-operator: %w: %s", err, bytes.TrimSpace(b))
	}
	return nil
}

// OperatorImageFrom writes the operator image of spec with the binary at
// bin (built by GoBuildOperator) under outDir.
func OperatorImageFrom(spec OperatorSpec, bin, outDir string) (Image, error) {
	is, err := operatorImage(spec, bin)
	if err != nil {
		return Image{}, err
	}
	img, err := assemble(is)
	if err != nil {
		return Image{}, err
	}
	return write(img, spec.Name, outDir)
}

func operatorImage(spec OperatorSpec, bin string) (imageSpec, error) {
	interp, err := interpreter(bin)
	if err != nil {
		return imageSpec{}, err
	}
	if interp != "" {
		return imageSpec{}, fmt.Errorf("%s is dynamically linked (%s); the operator image has no libraries", bin, interp)
	}
	t := newTree()
	if err := t.copyFile(OperatorPath, bin); err != nil {
		return imageSpec{}, err
	}
	for _, f := range []struct {
		path, data string
	}{
		{"/etc/passwd", distrolessPasswd},
		{"/etc/group", distrolessGroup},
		{"/etc/nsswitch.conf", nsswitch},
	} {
		if err := t.file(f.path, 0o644, []byte(f.data)); err != nil {
			return imageSpec{}, err
		}
	}
	if err := t.addFrom("/", caBundle); err != nil {
		return imageSpec{}, err
	}
	if err := t.dir("/tmp", 0o1777, 0, 0); err != nil {
		return imageSpec{}, err
	}
	if err := t.dir(nonrootHome, 0o700, 65532, 65532); err != nil {
		return imageSpec{}, err
	}
	return imageSpec{
		name: spec.Name,
		tree: t,
		config: v1.Config{
			Entrypoint: []string{OperatorPath},
			Env:        []string{defaultPath, "SSL_CERT_FILE=" + caBundle},
			User:       OperatorUser,
			WorkingDir: nonrootHome,
			Labels: map[string]string{
				"org.opencontainers.image.title":   "valkey-operator",
				"org.opencontainers.image.version": spec.versionOrDev(),
			},
		},
		history: "valkey-operator " + spec.versionOrDev() + " built with CGO_ENABLED=0 -trimpath, on a distroless-like static base",
	}, nil
}

func (s OperatorSpec) versionOrDev() string {
	if s.Version == "" {
		return "dev"
	}
	return s.Version
}
