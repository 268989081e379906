package nodeimages

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// interpreter is the dynamic loader an ELF executable names (PT_INTERP),
// or "" for a static one.
func interpreter(file string) (string, error) {
	f, err := elf.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return "", fmt.Errorf("%s: PT_INTERP: %w", file, err)
		}
		return string(bytes.TrimRight(b, "\x00")), nil
	}
	return "", nil
}

// libDirs are where the trees this package reads keep shared libraries,
// in the order the loader is told to search them.
var libDirs = []string{"/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib", "/lib"}

// SharedLibraries are the shared objects the program at prog (a path
// inside the tree at root, "/" for this machine) loads, as paths inside
// that tree, the dynamic loader included; nil for a static program. On
// this machine it asks ldd; for another tree it runs that tree's own loader
// in list mode (what ldd does) with the tree's library directories, and
// refuses a library found outside the tree.
func SharedLibraries(ctx context.Context, root, prog string) ([]string, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	host := filepath.Join(root, filepath.FromSlash(prog))
	interp, err := interpreter(host)
	if err != nil {
		return nil, err
	}
	if interp == "" {
		return nil, nil
	}
	var cmd *exec.Cmd
	if filepath.Clean(root) == "/" {
		cmd = exec.CommandContext(ctx, "ldd", host)
	} else {
		cmd = exec.CommandContext(ctx, filepath.Join(root, interp), "--library-path", libraryPath(root), "--list", host)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("list the libraries of %s: %w: %s", host, err, strings.TrimSpace(stderr.String()))
	}
	libs, err := parseLDD(string(out))
	if err != nil {
		return nil, fmt.Errorf("libraries of %s: %w", host, err)
	}
	seen := map[string]bool{interp: true}
	list := []string{interp}
	for _, l := range libs {
		if filepath.Clean(root) != "/" {
			rel, err := filepath.Rel(root, l)
			if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
				// The loader itself is listed under the name it was run as.
				if path.Base(l) == path.Base(interp) {
					continue
				}
				return nil, fmt.Errorf("%s loads %s, which is not in %s", prog, l, root)
			}
			l = "/" + filepath.ToSlash(rel)
		}
		if !seen[l] {
			seen[l] = true
			list = append(list, l)
		}
	}
	return list, nil
}

// parseLDD reads ldd's listing: "name => /path (0x...)" for a library
// found, "/path (0x...)" for the loader, a bare name for the vDSO, which
// is no file.
func parseLDD(out string) ([]string, error) {
	var libs []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if name, where, ok := strings.Cut(line, "=>"); ok {
			where = strings.TrimSpace(where)
			if strings.HasPrefix(where, "not found") {
				return nil, fmt.Errorf("%s not found", strings.TrimSpace(name))
			}
			f := strings.Fields(where)
			if len(f) == 0 || !strings.Contains(f[0], "/") {
				// A vDSO some ldd versions write as "name =>  (0x...)".
				continue
			}
			libs = append(libs, f[0])
			continue
		}
		f := strings.Fields(line)
		if strings.Contains(f[0], "/") {
			libs = append(libs, f[0])
		}
	}
	if len(libs) == 0 {
		return nil, errors.New("no libraries listed")
	}
	return libs, nil
}
