package nodeimages

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Image is an image written as an OCI image layout tar.
type Image struct {
	// Name is the reference pods use, e.g. valkey/valkey:8.0.1.
	Name string
	// FullName is Name as containerd stores it, e.g.
	// docker.io/valkey/valkey:8.0.1: the name the archive carries.
	FullName string
	// Path of the archive.
	Path string
	// Digest of the image manifest, as containerd and the kubelet report
	// it once imported.
	Digest v1.Hash
	// Image is the image itself.
	Image v1.Image
}

// Platform of every image here: the programs are this machine's.
var Platform = v1.Platform{OS: "linux", Architecture: "amd64"}

// Annotations of the archive's index entry. containerd (ctr images import,
// 1.6 and later) names the imported image after io.containerd.image.name
// and leaves it as written, so it has to be the full reference; the OCI
// ref.name holds only the tag, as containerd's own export writes it.
const (
	annotationContainerdName = "io.containerd.image.name"
	annotationRefName        = "org.opencontainers.image.ref.name"
)

// imageSpec is what every builder here hands to assemble.
type imageSpec struct {
	name    string
	tree    *tree
	config  v1.Config
	history string
}

// assemble makes the one-layer image of spec: OCI media types, the fixed
// platform, every timestamp at the epoch.
func assemble(spec imageSpec) (v1.Image, error) {
	layer, err := spec.tree.layer()
	if err != nil {
		return nil, fmt.Errorf("layer of %s: %w", spec.name, err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: epoch}, CreatedBy: spec.history},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS = Platform.OS
	cf.Architecture = Platform.Architecture
	cf.Created = v1.Time{Time: epoch}
	cf.Config = spec.config
	return mutate.ConfigFile(img, cf)
}

// write writes img under outDir as an OCI image layout tar named after ref
// and returns what was written.
func write(img v1.Image, ref, outDir string) (Image, error) {
	full, tag, err := FullName(ref)
	if err != nil {
		return Image{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return Image{}, err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return Image{}, err
	}
	dir, err := os.MkdirTemp(outDir, ".layout-")
	if err != nil {
		return Image{}, err
	}
	defer os.RemoveAll(dir)
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return Image{}, err
	}
	if err := lp.AppendImage(img,
		layout.WithPlatform(Platform),
		layout.WithAnnotations(map[string]string{
			annotationContainerdName: full,
			annotationRefName:        tag,
		})); err != nil {
		return Image{}, fmt.Errorf("write %s: %w", ref, err)
	}
	out := filepath.Join(outDir, ArchiveName(ref))
	if err := tarDir(dir, out); err != nil {
		return Image{}, fmt.Errorf("write %s: %w", out, err)
	}
	return Image{Name: ref, FullName: full, Path: out, Digest: digest, Image: img}, nil
}

// FullName is ref as containerd and the kubelet name it (Docker Hub as
// docker.io, library/ for official images) and its tag; ref must have a
// tag and no digest.
func FullName(ref string) (full, tag string, err error) {
	if strings.Contains(ref, "@") {
		return "", "", fmt.Errorf("image name %q: want repository:tag, not a digest", ref)
	}
	t, err := name.NewTag(ref)
	if err != nil {
		return "", "", fmt.Errorf("image name %q: %w", ref, err)
	}
	reg := t.RegistryStr()
	if reg == name.DefaultRegistry {
		reg = "docker.io"
	}
	return reg + "/" + t.RepositoryStr() + ":" + t.TagStr(), t.TagStr(), nil
}

// ArchiveName is the file name write gives the archive of ref:
// valkey/valkey:8.0.1 → valkey_valkey_8.0.1.oci.tar.
func ArchiveName(ref string) string {
	return strings.NewReplacer("/", "_", ":", "_", "@", "_").Replace(ref) + ".oci.tar"
}

// tarDir writes the layout directory dir as a tar at out, the way it would
// be archived by hand but deterministic: sorted paths, no timestamps, root
// owner. It goes through a temporary file, so a reader never sees half an
// archive.
func tarDir(dir, out string) (err error) {
	var paths []string
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			paths = append(paths, p)
		}
		return nil
	}); err != nil {
		return err
	}
	sort.Strings(paths)
	tmp, err := os.CreateTemp(filepath.Dir(out), ".archive-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	tw := tar.NewWriter(tmp)
	for _, p := range paths {
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), ModTime: epoch}
		if st.IsDir() {
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			continue
		}
		hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o644, st.Size()
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if err := copyInto(tw, p); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}

func copyInto(w io.Writer, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}
