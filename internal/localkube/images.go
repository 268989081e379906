package localkube

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/gomomento/valkey-operator/internal/testbin"
)

// ImageMapping says how the commands of a container image run on this
// machine. Mappings are tried in order and the first that matches the image
// wins; commands it does not list are looked up on the host's PATH.
type ImageMapping struct {
	// Repository matches an image whose repository equals it or ends with
	// "/"+Repository (so "valkey" matches valkey, valkey/valkey and
	// docker.io/valkey/valkey). Empty matches every image.
	Repository string
	// Tag is a path.Match pattern for the tag, e.g. "9.*". Empty matches any
	// tag, including none.
	Tag string
	// Commands maps a command's base name (valkey-server) to the argv prefix
	// that runs it here.
	Commands map[string][]string
	// DefaultCommand stands in for the image's entrypoint when a container
	// sets no command.
	DefaultCommand []string
	// Hint is added to errors when a mapped program is missing, e.g. how to
	// install it.
	Hint string
}

// DefaultImageMappings maps Valkey images: tags 9.* to the Valkey 9 tree that
// hack/install-valkey9.sh installs into valkey9Dir (run through that tree's
// own dynamic loader, so no chroot is needed), any other tag to the
// valkey-server and valkey-cli on PATH. An empty valkey9Dir leaves out the
// Valkey 9 mapping, and a 9.x image then runs the host build. The metrics
// exporter's image (oliver006/redis_exporter, whose entrypoint is
// /redis_exporter) runs Debian's build of the same program, whatever the
// tag.
func DefaultImageMappings(valkey9Dir string) []ImageMapping {
	var m []ImageMapping
	if valkey9Dir != "" {
		with := func(program string) []string { return testbin.Valkey9Command(valkey9Dir, program) }
		m = append(m, ImageMapping{
			Repository: "valkey",
			Tag:        "9.*",
			Commands: map[string][]string{
				"valkey-server": with("valkey-server"),
				"valkey-cli":    with("valkey-cli"),
			},
			DefaultCommand: []string{"valkey-server"},
			Hint:           "install Valkey 9 with hack/install-valkey9.sh",
		})
	}
	m = append(m, ImageMapping{
		Repository: "valkey",
		Commands: map[string][]string{
			"valkey-server": {"valkey-server"},
			"valkey-cli":    {"valkey-cli"},
		},
		DefaultCommand: []string{"valkey-server"},
		Hint:           "install Valkey with hack/install-valkey.sh",
	}, ImageMapping{
		Repository:     "redis_exporter",
		Commands:       map[string][]string{"redis_exporter": {"prometheus-redis-exporter"}},
		DefaultCommand: []string{"redis_exporter"},
		Hint:           "install prometheus-redis-exporter with hack/install-valkey.sh",
	})
	return m
}

// splitImage returns an image reference's repository and tag.
func splitImage(image string) (repo, tag string) {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	slash := strings.LastIndex(image, "/")
	if colon := strings.LastIndex(image, ":"); colon > slash {
		return image[:colon], image[colon+1:]
	}
	return image, ""
}

func (m ImageMapping) matches(image string) bool {
	repo, tag := splitImage(image)
	if m.Repository != "" && repo != m.Repository && !strings.HasSuffix(repo, "/"+m.Repository) {
		return false
	}
	if m.Tag != "" {
		ok, err := path.Match(m.Tag, tag)
		if err != nil || !ok {
			return false
		}
	}
	return true
}

func findMapping(mappings []ImageMapping, image string) *ImageMapping {
	for i := range mappings {
		if mappings[i].matches(image) {
			return &mappings[i]
		}
	}
	return nil
}

// errImage marks failures to map a container's program; the container then
// waits with reason ErrImagePull as a kubelet would for an image it cannot get.
var errImage = errors.New("image not runnable here")

// resolveArgv turns a container's command and args (already expanded and
// path-rewritten) into the argv to execute on this machine.
func resolveArgv(mappings []ImageMapping, image string, command, args []string) ([]string, error) {
	m := findMapping(mappings, image)
	var argv []string
	switch {
	case len(command) > 0:
		argv = append(append(argv, command...), args...)
	case m != nil && len(m.DefaultCommand) > 0:
		// Like the Valkey image's entrypoint: args that start with a known
		// command run as given, anything else is passed to the default.
		if len(args) > 0 && m.Commands[filepath.Base(args[0])] != nil {
			argv = append(argv, args...)
		} else {
			argv = append(append(argv, m.DefaultCommand...), args...)
		}
	case len(args) > 0:
		argv = append(argv, args...)
	default:
		return nil, fmt.Errorf("%w: image %q has no command mapped here and the container sets none", errImage, image)
	}
	prefix, err := resolveProgram(m, image, argv[0])
	if err != nil {
		return nil, err
	}
	return append(prefix, argv[1:]...), nil
}

// resolveProgram maps one program name to the argv prefix that runs it.
func resolveProgram(m *ImageMapping, image, program string) ([]string, error) {
	if m != nil {
		if p, ok := m.Commands[filepath.Base(program)]; ok && len(p) > 0 {
			bin, err := lookProgram(p[0])
			if err != nil {
				hint := ""
				if m.Hint != "" {
					hint = " (" + m.Hint + ")"
				}
				return nil, fmt.Errorf("%w: image %q maps %s to %s: %v%s", errImage, image, filepath.Base(program), p[0], err, hint)
			}
			return append([]string{bin}, p[1:]...), nil
		}
	}
	if filepath.IsAbs(program) {
		if st, err := os.Stat(program); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return []string{program}, nil
		}
	}
	bin, err := exec.LookPath(filepath.Base(program))
	if err != nil {
		return nil, fmt.Errorf("%w: image %q: %s not found on this machine", errImage, image, program)
	}
	return []string{bin}, nil
}

func lookProgram(p string) (string, error) {
	if filepath.IsAbs(p) {
		st, err := os.Stat(p)
		if err != nil {
			return "", err
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s is not executable", p)
		}
		return p, nil
	}
	return exec.LookPath(p)
}
