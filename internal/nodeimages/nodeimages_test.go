package nodeimages

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"debug/elf"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/testbin"
)

// buildTwice builds an image into two directories and checks that both
// archives are byte for byte the same; it returns the first.
func buildTwice(t *testing.T, build func(outDir string) (Image, error)) Image {
	t.Helper()
	a, err := build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if a.Digest != b.Digest {
		t.Fatalf("%s: digests differ between two builds: %s, %s", a.Name, a.Digest, b.Digest)
	}
	if ha, hb := fileSum(t, a.Path), fileSum(t, b.Path); ha != hb {
		t.Fatalf("%s: archives differ between two builds", a.Name)
	}
	return a
}

func fileSum(t *testing.T, p string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// readArchive reads the archive back as an OCI layout, checks its index
// entry (the name containerd imports it as, the platform) and returns the
// image in it.
func readArchive(t *testing.T, img Image) v1.Image {
	t.Helper()
	dir := t.TempDir()
	extract(t, openFile(t, img.Path), dir, false)
	ii, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := ii.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("%s: %d manifests in index.json, want 1", img.Name, len(im.Manifests))
	}
	d := im.Manifests[0]
	if d.Digest != img.Digest {
		t.Errorf("%s: index.json names %s, built %s", img.Name, d.Digest, img.Digest)
	}
	if got := d.Annotations[annotationContainerdName]; got != img.FullName {
		t.Errorf("%s: %s = %q, want %q", img.Name, annotationContainerdName, got, img.FullName)
	}
	if d.Platform == nil || d.Platform.OS != "linux" || d.Platform.Architecture != "amd64" {
		t.Errorf("%s: index platform %+v, want linux/amd64", img.Name, d.Platform)
	}
	out, err := ii.Image(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func openFile(t *testing.T, p string) io.ReadCloser {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// unpack extracts the image's file system into a new directory, owners
// included when running as root.
func unpack(t *testing.T, img v1.Image) string {
	t.Helper()
	dir := t.TempDir()
	extract(t, mutate.Extract(img), dir, os.Geteuid() == 0)
	return dir
}

func extract(t *testing.T, rc io.ReadCloser, dir string, chown bool) {
	t.Helper()
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(path.Clean("/"+hdr.Name)))
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
			if err == nil {
				err = os.Chmod(p, fs.FileMode(hdr.Mode&0o777)|modeBits(hdr.Mode))
			}
		case tar.TypeSymlink:
			err = os.Symlink(hdr.Linkname, p)
		case tar.TypeReg:
			var f *os.File
			f, err = os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fs.FileMode(hdr.Mode&0o777))
			if err == nil {
				_, err = io.Copy(f, tr)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
		default:
			t.Fatalf("%s: unexpected tar entry type %q", hdr.Name, hdr.Typeflag)
		}
		if err == nil && chown {
			err = os.Lchown(p, hdr.Uid, hdr.Gid)
			if err == nil && hdr.Typeflag == tar.TypeDir {
				err = os.Chmod(p, fs.FileMode(hdr.Mode&0o777)|modeBits(hdr.Mode))
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func modeBits(m int64) fs.FileMode {
	if m&0o1000 != 0 {
		return fs.ModeSticky
	}
	return 0
}

// resolveIn is the file p (an image path) names in the image unpacked at
// dir, following symlinks inside the image, never out of it.
func resolveIn(t *testing.T, dir, p string) string {
	t.Helper()
	cur := "/"
	parts := strings.Split(strings.TrimPrefix(path.Clean("/"+p), "/"), "/")
	for links := 0; len(parts) > 0; {
		next := path.Join(cur, parts[0])
		parts = parts[1:]
		st, err := os.Lstat(filepath.Join(dir, next))
		if err != nil {
			t.Fatalf("%s: %s not in the image: %v", p, next, err)
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			t.Fatalf("%s: symlink loop", p)
		}
		target, err := os.Readlink(filepath.Join(dir, next))
		if err != nil {
			t.Fatal(err)
		}
		if !path.IsAbs(target) {
			target = path.Join(cur, target)
		}
		parts = append(strings.Split(strings.TrimPrefix(path.Clean(target), "/"), "/"), parts...)
		cur = "/"
	}
	return filepath.Join(dir, filepath.FromSlash(cur))
}

func configOf(t *testing.T, img v1.Image) *v1.ConfigFile {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("config platform %s/%s, want linux/amd64", cf.OS, cf.Architecture)
	}
	if !cf.Created.IsZero() && !cf.Created.Equal(epoch) {
		t.Errorf("config created %s, want the epoch", cf.Created)
	}
	return cf
}

func wantConfig(t *testing.T, cf *v1.ConfigFile, entrypoint, cmd []string, user, workdir string) {
	t.Helper()
	c := cf.Config
	if !slices.Equal(c.Entrypoint, entrypoint) {
		t.Errorf("entrypoint %q, want %q", c.Entrypoint, entrypoint)
	}
	if !slices.Equal(c.Cmd, cmd) {
		t.Errorf("cmd %q, want %q", c.Cmd, cmd)
	}
	if c.User != user {
		t.Errorf("user %q, want %q", c.User, user)
	}
	if c.WorkingDir != workdir {
		t.Errorf("working directory %q, want %q", c.WorkingDir, workdir)
	}
}

// wantLibraries checks that every library the program at prog in root
// loads is in the image unpacked at dir, under the same path.
func wantLibraries(t *testing.T, root, prog, dir string, listed []string) {
	t.Helper()
	if len(listed) == 0 {
		t.Fatalf("%s: no libraries listed", prog)
	}
	for _, l := range listed {
		got := resolveIn(t, dir, l)
		want, err := filepath.EvalSymlinks(filepath.Join(root, l))
		if err != nil {
			t.Fatal(err)
		}
		if fileSum(t, got) != fileSum(t, want) {
			t.Errorf("%s: %s in the image differs from %s", prog, l, want)
		}
	}
}

// lddList is what the system ldd lists for a program of this machine.
func lddList(t *testing.T, prog string) []string {
	t.Helper()
	out, err := exec.Command("ldd", prog).Output()
	if err != nil {
		t.Fatalf("ldd %s: %v", prog, err)
	}
	libs, err := parseLDD(string(out))
	if err != nil {
		t.Fatal(err)
	}
	return libs
}

// runIn runs argv (argv[0] an absolute image path) chrooted into dir as uid:gid and returns
// its output; it needs root.
func runIn(t *testing.T, dir string, uid, gid uint32, argv ...string) string {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/"
	cmd.Env = []string{defaultPath}
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: dir, Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chroot %s %q: %v: %s", dir, argv, err, out)
	}
	return string(out)
}

func TestValkeyImages(t *testing.T) {
	if _, err := exec.LookPath("valkey-server"); err != nil {
		t.Fatal("no valkey-server installed (make valkey)")
	}
	specs := []ValkeySpec{Valkey8()}
	if dir := testbin.Valkey9Dir(); dir != "" {
		specs = append(specs, Valkey9(dir))
	}
	for _, spec := range specs {
		t.Run(spec.Version, func(t *testing.T) {
			t.Parallel()
			if _, err := os.Stat(filepath.Join(spec.Root, "usr", "bin", "valkey-server")); err != nil {
				t.Fatalf("no Valkey %s in %s (make valkey)", spec.Version, spec.Root)
			}
			ctx := context.Background()
			built := buildTwice(t, func(out string) (Image, error) { return BuildValkey(ctx, spec, out) })
			if built.FullName != "docker.io/"+spec.Name {
				t.Errorf("full name %q", built.FullName)
			}
			img := readArchive(t, built)
			cf := configOf(t, img)
			wantConfig(t, cf, []string{"docker-entrypoint.sh"}, []string{"valkey-server"}, "", DataDir)
			dir := unpack(t, img)

			for _, p := range []string{"valkey-server", "valkey-cli"} {
				prog := "/usr/bin/" + p
				var listed []string
				if spec.Root == "/" {
					listed = lddList(t, prog)
				} else {
					var err error
					if listed, err = SharedLibraries(ctx, spec.Root, prog); err != nil {
						t.Fatal(err)
					}
				}
				wantLibraries(t, spec.Root, prog, dir, listed)
			}
			for _, d := range append([]string{DataDir}, valkeyMountPoints...) {
				st, err := os.Stat(filepath.Join(dir, d))
				if err != nil || !st.IsDir() {
					t.Errorf("%s: no directory in the image", d)
					continue
				}
				if os.Geteuid() == 0 {
					if s := st.Sys().(*syscall.Stat_t); s.Uid != ValkeyUID || s.Gid != ValkeyUID {
						t.Errorf("%s: owned by %d:%d, want %d:%d", d, s.Uid, s.Gid, ValkeyUID, ValkeyUID)
					}
				}
			}
			passwd, _ := os.ReadFile(filepath.Join(dir, "etc", "passwd"))
			group, _ := os.ReadFile(filepath.Join(dir, "etc", "group"))
			if !strings.Contains(string(passwd), "\nvalkey:x:999:999:") || !strings.Contains(string(group), "\nvalkey:x:999:") {
				t.Errorf("no valkey user 999 in /etc/passwd and /etc/group:\n%s\n%s", passwd, group)
			}

			// The server runs from the layer through the layer's own loader
			// and libraries, without a chroot.
			ld := resolveIn(t, dir, "/lib64/ld-linux-x86-64.so.2")
			out, err := exec.Command(ld, "--library-path", filepath.Join(dir, "usr", "lib", "x86_64-linux-gnu"),
				// The server's name (a link to valkey-check-rdb) picks the program.
				filepath.Join(dir, "usr", "bin", "valkey-server"), "--version").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "v="+spec.Version+" ") {
				t.Fatalf("valkey-server --version from the layer: %v: %s", err, out)
			}
			if os.Geteuid() != 0 {
				t.Log("not root: no chroot checks")
				return
			}
			// Chrooted into the layer, as the pod runs it (as the valkey
			// user, the command on PATH), and through the entrypoint.
			if out := runIn(t, dir, ValkeyUID, ValkeyUID, "/bin/sh", "-c", "valkey-server --version"); !strings.Contains(out, "v="+spec.Version+" ") {
				t.Errorf("valkey-server --version in a chroot: %s", out)
			}
			if out := runIn(t, dir, ValkeyUID, ValkeyUID, "/bin/sh", "-c", "valkey-cli --version"); !strings.Contains(out, spec.Version) {
				t.Errorf("valkey-cli --version in a chroot: %s", out)
			}
			if out := runIn(t, dir, ValkeyUID, ValkeyUID, EntrypointPath, "--version"); !strings.Contains(out, "v="+spec.Version+" ") {
				t.Errorf("docker-entrypoint.sh --version in a chroot: %s", out)
			}
		})
	}
}

func TestExporterImage(t *testing.T) {
	t.Parallel()
	spec := Exporter()
	if _, err := os.Stat(spec.Program); err != nil {
		t.Fatal("no prometheus-redis-exporter installed (make valkey)")
	}
	if spec.Name != render.DefaultExporterImage {
		t.Fatalf("exporter image %q, the render's default is %q", spec.Name, render.DefaultExporterImage)
	}
	ctx := context.Background()
	built := buildTwice(t, func(out string) (Image, error) { return BuildExporter(ctx, spec, out) })
	img := readArchive(t, built)
	cf := configOf(t, img)
	wantConfig(t, cf, []string{ExporterPath}, nil, ExporterUser, "")
	dir := unpack(t, img)
	if fileSum(t, resolveIn(t, dir, ExporterPath)) != fileSum(t, spec.Program) {
		t.Errorf("%s is not %s", ExporterPath, spec.Program)
	}
	wantLibraries(t, "/", spec.Program, dir, lddList(t, spec.Program))
	if os.Geteuid() != 0 {
		return
	}
	// The rendered container sets only args: the entrypoint takes them.
	if out := runIn(t, dir, ValkeyUID, ValkeyUID, ExporterPath, "--version"); !strings.Contains(out, "Redis Metrics Exporter "+spec.Version) {
		t.Errorf("%s --version in a chroot: %s", ExporterPath, out)
	}
}

func TestOperatorImage(t *testing.T) {
	t.Parallel()
	root, err := testbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	spec := Operator(root)
	built := buildTwice(t, func(out string) (Image, error) { return BuildOperator(ctx, spec, out) })
	if built.FullName != "docker.io/gomomento/valkey-operator:latest" {
		t.Errorf("full name %q", built.FullName)
	}
	img := readArchive(t, built)
	cf := configOf(t, img)
	wantConfig(t, cf, []string{OperatorPath}, nil, OperatorUser, nonrootHome)
	dir := unpack(t, img)
	bin := resolveIn(t, dir, OperatorPath)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has a dynamic loader", OperatorPath)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("%s needs libraries %q (%v)", OperatorPath, libs, err)
	}
	passwd, _ := os.ReadFile(filepath.Join(dir, "etc", "passwd"))
	if !strings.Contains(string(passwd), "\nnonroot:x:65532:65532:") {
		t.Errorf("no nonroot user 65532 in /etc/passwd:\n%s", passwd)
	}
	if os.Geteuid() != 0 {
		return
	}
	if out := runIn(t, dir, 65532, 65532, OperatorPath, "-version"); !strings.Contains(out, "dev") {
		t.Errorf("%s -version in a chroot: %s", OperatorPath, out)
	}
}

func TestParseLDD(t *testing.T) {
	out := "\tlinux-vdso.so.1 (0x00007ffd)\n" +
		"\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n" +
		"\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n" +
		"\tlibfoo.so.1 =>  (0x00007f)\n"
	got, err := parseLDD(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"}
	if !slices.Equal(got, want) {
		t.Errorf("parseLDD = %q, want %q", got, want)
	}
	if _, err := parseLDD("\tlibgone.so.1 => not found\n"); err == nil {
		t.Error("a missing library parsed")
	}
}

func TestFullName(t *testing.T) {
	for ref, want := range map[string]string{
		"valkey/valkey:8.0.1":                 "docker.io/valkey/valkey:8.0.1",
		"oliver006/redis_exporter:v1.45.0":    "docker.io/oliver006/redis_exporter:v1.45.0",
		"redis:7":                             "docker.io/library/redis:7",
		"registry.example.com:5000/a/b:1":     "registry.example.com:5000/a/b:1",
		"gomomento/valkey-operator:latest":    "docker.io/gomomento/valkey-operator:latest",
		"docker.io/valkey/valkey:9.1.2":       "docker.io/valkey/valkey:9.1.2",
		"index.docker.io/valkey/valkey:9.1.2": "docker.io/valkey/valkey:9.1.2",
	} {
		if got, _, err := FullName(ref); err != nil || got != want {
			t.Errorf("FullName(%q) = %q, %v; want %q", ref, got, err, want)
		}
	}
	if _, _, err := FullName("valkey/valkey@sha256:" + strings.Repeat("0", 64)); err == nil {
		t.Error("a digest reference was accepted")
	}
}
