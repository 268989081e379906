// Package testbin locates the test control plane binaries (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler) that
// hack/build-testbin.sh builds into bin/testbin at the repository root,
// and the Valkey 9 tree hack/install-valkey9.sh installs into bin/valkey9.
package testbin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// envDir overrides the directory holding the binaries.
const envDir = "VALKEY_TESTBIN_DIR"

// Binaries the control plane needs; the first two are enough for envtest.
var (
	APIServerBinaries = []string{"etcd", "kube-apiserver"}
	AllBinaries       = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}
)

// RepoRoot walks up from the working directory to the directory holding go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("getting working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Dir returns the directory with the control plane binaries, checking that
// every binary in want is present and executable.
func Dir(want ...string) (string, error) {
	dir := os.Getenv(envDir)
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin", "testbin")
	}
	if len(want) == 0 {
		want = APIServerBinaries
	}
	for _, name := range want {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("test control plane binary %q missing in %s: run hack/build-testbin.sh (make testbin)", name, dir)
		}
	}
	return dir, nil
}

// Valkey9Dir is where hack/install-valkey9.sh installs the Valkey 9 tree,
// or "" when the repository root cannot be found.
func Valkey9Dir() string {
	root, err := RepoRoot()
	if err != nil {
		return ""
	}
	return filepath.Join(root, "bin", "valkey9")
}

// Valkey9Command is the command running program (valkey-server,
// valkey-cli) of the Valkey 9 tree at dir through the tree's own dynamic
// loader, so that no chroot is needed.
func Valkey9Command(dir, program string) []string {
	return []string{
		filepath.Join(dir, "lib64", "ld-linux-x86-64.so.2"),
		"--library-path", filepath.Join(dir, "usr", "lib", "x86_64-linux-gnu"),
		filepath.Join(dir, "usr", "bin", program),
	}
}

// Valkey9Server is the command running the installed Valkey 9 server, or
// nil when it is not installed.
func Valkey9Server() []string {
	dir := Valkey9Dir()
	if dir == "" {
		return nil
	}
	argv := Valkey9Command(dir, "valkey-server")
	for _, p := range []string{argv[0], argv[len(argv)-1]} {
		if _, err := os.Stat(p); err != nil {
			return nil
		}
	}
	return argv
}
