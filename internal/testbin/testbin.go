// Package testbin locates the test control plane binaries (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler) that
// hack/build-testbin.sh builds into bin/testbin at the repository root.
package testbin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// EnvDir overrides the directory holding the binaries.
const EnvDir = "VALKEY_TESTBIN_DIR"

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
	dir := os.Getenv(EnvDir)
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
