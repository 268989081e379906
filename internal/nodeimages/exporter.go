package nodeimages

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/gomomento/valkey-operator/internal/render"
)

// Paths inside the exporter image.
const (
	// ExporterPath is the published image's entrypoint.
	ExporterPath = "/redis_exporter"
	// caBundle is where Debian and the published images keep the CA
	// certificates; the rendered exporter is given its CA file instead.
	caBundle = "/etc/ssl/certs/ca-certificates.crt"
	// exporterTLSDir is where the rendered exporter container mounts the
	// node's CA.
	exporterTLSDir = "/etc/valkey/exporter-tls"
)

// ExporterUser is the published redis_exporter image's user.
const ExporterUser = "59000:59000"

// ExporterSpec is a metrics exporter image to build from an installed
// redis_exporter.
type ExporterSpec struct {
	// Name pods give the image; render.DefaultExporterImage.
	Name string
	// Program is the redis_exporter build on this machine.
	Program string
	// Version it must report, without the v.
	Version string
}

// Exporter is render.DefaultExporterImage from Debian's
// prometheus-redis-exporter (bookworm, 1.45.0), which hack/install-valkey.sh
// installs.
func Exporter() ExporterSpec {
	return ExporterSpec{Name: render.DefaultExporterImage, Program: "/usr/bin/prometheus-redis-exporter", Version: "1.45.0"}
}

// BuildExporter builds the exporter image of spec and writes it under
// outDir: the program at /redis_exporter with its libraries, the CA
// bundle, the published image's entrypoint, user and port.
func BuildExporter(ctx context.Context, spec ExporterSpec, outDir string) (Image, error) {
	is, err := exporterImage(ctx, spec)
	if err != nil {
		return Image{}, err
	}
	img, err := assemble(is)
	if err != nil {
		return Image{}, err
	}
	return write(img, spec.Name, outDir)
}

var exporterVersionRE = regexp.MustCompile(`Redis Metrics Exporter v?([0-9][0-9.]*)`)

func exporterImage(ctx context.Context, spec ExporterSpec) (imageSpec, error) {
	out, err := exec.CommandContext(ctx, spec.Program, "--version").CombinedOutput()
	if err != nil {
		return imageSpec{}, fmt.Errorf("%s --version: %w: %s", spec.Program, err, bytes.TrimSpace(out))
	}
	m := exporterVersionRE.FindSubmatch(out)
	if m == nil || string(m[1]) != spec.Version {
		return imageSpec{}, fmt.Errorf("%s: %s is not redis_exporter %s: %q", spec.Name, spec.Program, spec.Version, bytes.TrimSpace(out))
	}
	prog, err := filepath.EvalSymlinks(spec.Program)
	if err != nil {
		return imageSpec{}, err
	}
	t := newTree()
	if err := t.copyFile(ExporterPath, prog); err != nil {
		return imageSpec{}, err
	}
	libs, err := SharedLibraries(ctx, "/", prog)
	if err != nil {
		return imageSpec{}, err
	}
	for _, l := range libs {
		if err := t.addFrom("/", l); err != nil {
			return imageSpec{}, fmt.Errorf("library of %s: %w", prog, err)
		}
	}
	if err := t.addFrom("/", caBundle); err != nil {
		return imageSpec{}, err
	}
	if err := t.file("/etc/nsswitch.conf", 0o644, []byte(nsswitch)); err != nil {
		return imageSpec{}, err
	}
	if err := t.dir(exporterTLSDir, 0o755, 0, 0); err != nil {
		return imageSpec{}, err
	}
	return imageSpec{
		name: spec.Name,
		tree: t,
		config: v1.Config{
			Entrypoint:   []string{ExporterPath},
			Env:          []string{defaultPath},
			User:         ExporterUser,
			ExposedPorts: map[string]struct{}{"9121/tcp": {}},
			Labels: map[string]string{
				"org.opencontainers.image.title":   "redis_exporter",
				"org.opencontainers.image.version": "v" + spec.Version,
			},
		},
		history: "redis_exporter " + spec.Version + " from Debian's prometheus-redis-exporter package, with the libraries ldd lists",
	}, nil
}
