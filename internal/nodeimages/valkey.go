package nodeimages

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ValkeyUID is the valkey user and group of the published valkey/valkey
// images, which the rendered pods run as.
const ValkeyUID = 999

// Paths inside the Valkey images.
const (
	// valkeyBin holds the Debian package's programs.
	valkeyBin = "/usr/bin"
	// EntrypointPath is the published image's entrypoint, found on PATH.
	EntrypointPath = "/usr/local/bin/docker-entrypoint.sh"
	// DataDir is the published image's working directory and volume.
	DataDir = "/data"
)

// defaultPath is the PATH of the published images.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// valkeyPrograms are the Debian programs every Valkey image holds: the
// server (a link to valkey-check-rdb, one binary for all three), the CLI,
// the AOF checker and the benchmark, as the published image has them.
var valkeyPrograms = []string{"valkey-server", "valkey-check-rdb", "valkey-check-aof", "valkey-cli", "valkey-benchmark"}

// valkeyMountPoints are the directories the rendered Valkey pod mounts
// volumes on (internal/render's paths.go): present and owned by the valkey
// user, so the image runs as rendered with a read-only root file system
// and also without those volumes.
var valkeyMountPoints = []string{
	"/etc/valkey/conf", "/etc/valkey/acl", "/etc/valkey/auth", "/etc/valkey/tls",
	"/var/lib/valkey",
}

// ValkeySpec is a Valkey image to build from an installed Debian build.
type ValkeySpec struct {
	// Name pods give the image, e.g. valkey/valkey:8.0.1.
	Name string
	// Root is the file system tree holding the build: "/" for the
	// valkey-server hack/install-valkey.sh installs on this machine, or a
	// tree like the one hack/install-valkey9.sh bootstraps. Programs,
	// libraries, the shell and setpriv all come from it.
	Root string
	// Version the server must report; the build fails otherwise, so an
	// image never carries a tag its server does not run.
	Version string
}

// Valkey8 is valkey/valkey:8.0.1 from Debian's bookworm-backports
// valkey-server on this machine.
func Valkey8() ValkeySpec {
	return ValkeySpec{Name: "valkey/valkey:8.0.1", Root: "/", Version: "8.0.1"}
}

// Valkey9 is valkey/valkey:9.1.2 from the Debian tree at root (bin/valkey9
// of the repository, see testbin.Valkey9Dir).
func Valkey9(root string) ValkeySpec {
	return ValkeySpec{Name: "valkey/valkey:9.1.2", Root: root, Version: "9.1.2"}
}

// entrypoint does what the published image's docker-entrypoint.sh does with
// the tools this image has (dash and setpriv; no find, chown or id):
// options or a .conf file as the first argument run valkey-server with
// them; valkey-server started as root drops to the valkey user; a default
// umask becomes 0077. The published script also chowns what the valkey
// user does not own under the working directory; this one does not.
// Rendered pods set the command, so they never run it.
const entrypoint = `#!/bin/sh
set -e

if [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then
	set -- valkey-server "$@"
fi

uid=
if [ -r /proc/self/status ]; then
	while read -r key value rest; do
		if [ "$key" = "Uid:" ]; then
			uid=$value
		fi
	done < /proc/self/status
fi
if [ "$1" = "valkey-server" ] && [ "$uid" = "0" ]; then
	exec setpriv --reuid=999 --regid=999 --clear-groups -- "$0" "$@"
fi

um="$(umask)"
if [ "$um" = "0022" ]; then
	umask 0077
fi

exec "$@" $VALKEY_EXTRA_FLAGS
`

// passwd and group of the Valkey images: Debian's root and nobody, and
// the valkey user the published image adds (groupadd -r -g 999 valkey;
// useradd -r -g valkey -u 999 valkey).
const (
	valkeyPasswd = "root:x:0:0:root:/root:/bin/sh\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n" +
		"valkey:x:999:999::/home/valkey:/bin/sh\n"
	valkeyGroup = "root:x:0:\n" +
		"nogroup:x:65534:\n" +
		"valkey:x:999:\n"
	nsswitch = "passwd: files\ngroup: files\nhosts: files dns\n"
)

// BuildValkey builds the Valkey image of spec and writes it under outDir.
func BuildValkey(ctx context.Context, spec ValkeySpec, outDir string) (Image, error) {
	is, err := valkeyImage(ctx, spec)
	if err != nil {
		return Image{}, err
	}
	img, err := assemble(is)
	if err != nil {
		return Image{}, err
	}
	return write(img, spec.Name, outDir)
}

func valkeyImage(ctx context.Context, spec ValkeySpec) (imageSpec, error) {
	if spec.Root == "" {
		spec.Root = "/"
	}
	root, err := filepath.Abs(spec.Root)
	if err != nil {
		return imageSpec{}, err
	}
	got, err := valkeyVersion(ctx, root)
	if err != nil {
		return imageSpec{}, err
	}
	if got != spec.Version {
		return imageSpec{}, fmt.Errorf("%s: valkey-server in %s is %s, not %s", spec.Name, root, got, spec.Version)
	}
	t := newTree()
	programs := []string{"/usr/bin/dash", "/usr/bin/setpriv"}
	for _, p := range valkeyPrograms {
		programs = append(programs, valkeyBin+"/"+p)
	}
	if err := addPrograms(ctx, t, root, programs); err != nil {
		return imageSpec{}, fmt.Errorf("%s: %w", spec.Name, err)
	}
	// The published image keeps its programs in /usr/local/bin.
	for _, p := range []string{"valkey-server", "valkey-cli"} {
		if err := t.symlink("/usr/local/bin/"+p, valkeyBin+"/"+p); err != nil {
			return imageSpec{}, err
		}
	}
	if err := t.addFrom(root, "/bin/sh"); err != nil {
		return imageSpec{}, fmt.Errorf("%s: %w", spec.Name, err)
	}
	if err := addMergedUsr(t, root); err != nil {
		return imageSpec{}, fmt.Errorf("%s: %w", spec.Name, err)
	}
	for _, f := range []struct {
		path string
		mode int64
		data string
	}{
		{EntrypointPath, 0o755, entrypoint},
		{"/etc/passwd", 0o644, valkeyPasswd},
		{"/etc/group", 0o644, valkeyGroup},
		{"/etc/nsswitch.conf", 0o644, nsswitch},
	} {
		if err := t.file(f.path, f.mode, []byte(f.data)); err != nil {
			return imageSpec{}, err
		}
	}
	if err := t.dir("/tmp", 0o1777, 0, 0); err != nil {
		return imageSpec{}, err
	}
	for _, d := range append([]string{DataDir}, valkeyMountPoints...) {
		if err := t.dir(d, 0o755, ValkeyUID, ValkeyUID); err != nil {
			return imageSpec{}, err
		}
	}
	return imageSpec{
		name:    spec.Name,
		tree:    t,
		config:  valkeyConfig(spec.Version),
		history: "valkey-server " + spec.Version + " from Debian's valkey-server and valkey-tools packages, with the libraries ldd lists",
	}, nil
}

// valkeyConfig is the published image's: entrypoint, command, working
// directory, volume and port; no user (the entrypoint drops root).
func valkeyConfig(version string) v1.Config {
	return v1.Config{
		Entrypoint:   []string{"docker-entrypoint.sh"},
		Cmd:          []string{"valkey-server"},
		Env:          []string{defaultPath},
		WorkingDir:   DataDir,
		Volumes:      map[string]struct{}{DataDir: {}},
		ExposedPorts: map[string]struct{}{"6379/tcp": {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":   "valkey",
			"org.opencontainers.image.version": version,
		},
	}
}

var valkeyVersionRE = regexp.MustCompile(`\bv=([0-9][^ ]*)`)

// valkeyVersion runs the tree's valkey-server --version through the
// tree's loader.
func valkeyVersion(ctx context.Context, root string) (string, error) {
	prog := filepath.Join(root, "usr", "bin", "valkey-server")
	argv, err := LoaderCommand(root, "/usr/bin/valkey-server")
	if err != nil {
		return "", err
	}
	argv = append(argv, "--version")
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, bytes.TrimSpace(out))
	}
	m := valkeyVersionRE.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("%s: no version in %q", prog, out)
	}
	return string(m[1]), nil
}

// LoaderCommand is the argv prefix that runs prog (a path inside the tree
// at root) on this machine without a chroot: prog itself for this
// machine's tree, otherwise the tree's own dynamic loader with the tree's
// library directories.
func LoaderCommand(root, prog string) ([]string, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	host := filepath.Join(root, filepath.FromSlash(prog))
	if root == "/" {
		return []string{host}, nil
	}
	interp, err := interpreter(host)
	if err != nil {
		return nil, err
	}
	if interp == "" {
		return []string{host}, nil
	}
	return []string{filepath.Join(root, interp), "--library-path", libraryPath(root), host}, nil
}

// libraryPath is the loader's --library-path for the tree at root.
func libraryPath(root string) string {
	dirs := make([]string, len(libDirs))
	for i, d := range libDirs {
		dirs[i] = filepath.Join(root, d)
	}
	return strings.Join(dirs, ":")
}

// addMergedUsr adds the links of a merged-/usr Debian tree (/bin, /lib,
// /lib64, /sbin into /usr) that root has, so that paths through either
// name work in the image as they do in Debian.
func addMergedUsr(t *tree, root string) error {
	for _, p := range []string{"/bin", "/lib", "/lib64", "/sbin"} {
		st, err := os.Lstat(filepath.Join(root, p))
		if err != nil || st.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		if err := t.addFrom(root, p); err != nil {
			return err
		}
	}
	return nil
}

// addPrograms adds each program of the tree at root (paths inside it)
// with every library it loads.
func addPrograms(ctx context.Context, t *tree, root string, programs []string) error {
	for _, p := range programs {
		if err := t.addFrom(root, p); err != nil {
			return err
		}
		libs, err := SharedLibraries(ctx, root, p)
		if err != nil {
			return err
		}
		for _, l := range libs {
			if err := t.addFrom(root, l); err != nil {
				return fmt.Errorf("library of %s: %w", p, err)
			}
		}
	}
	return nil
}
