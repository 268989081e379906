package realnode

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gomomento/valkey-operator/internal/testbin"
)

// PauseImage is the sandbox image every node runs, built from ./pause.
const PauseImage = "localhost/realnode/pause:v1"

// ImageFile is one regular file of an image.
type ImageFile struct {
	// Path inside the image, absolute ("/pause").
	Path string
	// Mode of the file (0o755 for a program).
	Mode fs.FileMode
	// Data is the file's content; when nil, Source is read.
	Data []byte
	// Source is a file on this machine to copy.
	Source string
}

// ImageSpec is an image of a single layer, built without a registry.
type ImageSpec struct {
	// Ref names the image once imported ("localhost/realnode/pause:v1").
	Ref string
	// Files make up the layer; parent directories are added.
	Files []ImageFile
	// Entrypoint, Cmd, User, Env and WorkingDir are the image's config.
	Entrypoint []string
	Cmd        []string
	User       string
	Env        []string
	WorkingDir string
}

// epoch is every timestamp in a built image, so the same files give the
// same image digest.
var epoch = time.Unix(0, 0).UTC()

// WriteImage writes spec as an OCI image layout packed in a tar archive at
// tarPath, the form `ctr images import` reads. The image is for this
// machine's platform (linux/GOARCH) and carries Ref as both its OCI
// ref.name and containerd's image name annotations.
func WriteImage(tarPath string, spec ImageSpec) error {
	if spec.Ref == "" {
		return fmt.Errorf("image has no ref")
	}
	layerTar, err := layerArchive(spec.Files)
	if err != nil {
		return fmt.Errorf("image %s: layer: %w", spec.Ref, err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return fmt.Errorf("image %s: layer: %w", spec.Ref, err)
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, MediaType: types.OCILayer})
	if err != nil {
		return fmt.Errorf("image %s: appending layer: %w", spec.Ref, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("image %s: config: %w", spec.Ref, err)
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = runtime.GOARCH
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = spec.Entrypoint
	cf.Config.Cmd = spec.Cmd
	cf.Config.User = spec.User
	cf.Config.Env = spec.Env
	cf.Config.WorkingDir = spec.WorkingDir
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return fmt.Errorf("image %s: config: %w", spec.Ref, err)
	}

	dir, err := os.MkdirTemp(filepath.Dir(tarPath), ".oci-layout-")
	if err != nil {
		return fmt.Errorf("image %s: %w", spec.Ref, err)
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("image %s: writing OCI layout: %w", spec.Ref, err)
	}
	if err := p.AppendImage(img,
		layout.WithAnnotations(map[string]string{
			"org.opencontainers.image.ref.name": spec.Ref,
			"io.containerd.image.name":          spec.Ref,
		}),
		layout.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}),
	); err != nil {
		return fmt.Errorf("image %s: writing OCI layout: %w", spec.Ref, err)
	}
	if err := tarDir(dir, tarPath); err != nil {
		return fmt.Errorf("image %s: packing %s: %w", spec.Ref, tarPath, err)
	}
	return nil
}

// layerArchive is an uncompressed tar of files, with their parent
// directories, owned by root, every timestamp at the epoch.
func layerArchive(files []ImageFile) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	sorted := append([]ImageFile(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	for _, f := range sorted {
		name := strings.TrimPrefix(path.Clean("/"+f.Path), "/")
		if name == "" {
			return nil, fmt.Errorf("file with empty path")
		}
		var parents []string
		for d := path.Dir(name); d != "." && !dirs[d]; d = path.Dir(d) {
			parents = append(parents, d)
		}
		for i := len(parents) - 1; i >= 0; i-- {
			dirs[parents[i]] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: parents[i] + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
		}
		data := f.Data
		if data == nil {
			var err error
			if data, err = os.ReadFile(f.Source); err != nil {
				return nil, err
			}
		}
		mode := f.Mode.Perm()
		if mode == 0 {
			mode = 0o644
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(mode), Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarDir packs the regular files under dir into a tar at dst, in name
// order, with timestamps at the epoch.
func tarDir(dir, dst string) error {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(out)
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			out.Close()
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			out.Close()
			return err
		}
		if _, err := tw.Write(data); err != nil {
			out.Close()
			return err
		}
	}
	if err := tw.Close(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// BuildPause compiles ./pause as a static binary at dst.
func BuildPause(ctx context.Context, dst string) error { return buildStatic(ctx, "pause", dst) }

// buildStatic compiles the command in ./<pkg> as a static binary at dst.
func buildStatic(ctx context.Context, pkg, dst string) error {
	root, err := testbin.RepoRoot()
	if err != nil {
		return fmt.Errorf("building the %s binary: %w", pkg, err)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", dst,
		"github.com/gomomento/valkey-operator/internal/realnode/"+pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the %s binary: %w: %s", pkg, err, out)
	}
	return nil
}

// ProbeImage is the client pod of the network checks, built from ./probe
// (entrypoint /probe; see its doc for the checks it takes as arguments).
const ProbeImage = "localhost/realnode/probe:v1"

// WriteProbeImage builds the probe and writes ProbeImage as an OCI tarball
// at tarPath.
func WriteProbeImage(ctx context.Context, tarPath string) error {
	bin := tarPath + ".probe"
	if err := buildStatic(ctx, "probe", bin); err != nil {
		return err
	}
	defer os.Remove(bin)
	return WriteImage(tarPath, ImageSpec{
		Ref:        ProbeImage,
		Files:      []ImageFile{{Path: "/probe", Mode: 0o755, Source: bin}},
		Entrypoint: []string{"/probe"},
	})
}

// WritePauseImage builds the pause binary and writes the pause image
// (PauseImage, entrypoint /pause) as an OCI tarball at tarPath.
func WritePauseImage(ctx context.Context, tarPath string) error {
	bin := tarPath + ".pause"
	if err := BuildPause(ctx, bin); err != nil {
		return err
	}
	defer os.Remove(bin)
	return WriteImage(tarPath, ImageSpec{
		Ref:        PauseImage,
		Files:      []ImageFile{{Path: "/pause", Mode: 0o755, Source: bin}},
		Entrypoint: []string{"/pause"},
	})
}
