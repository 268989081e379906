// Command rbacscope writes the roles of the namespace-scoped install from
// the generated ClusterRole:
//
//	go run ./hack/rbacscope
//
// make generate runs it after controller-gen, from the repository root, and
// a test in internal/rbacscope fails while the committed files differ from
// what this writes.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gomomento/valkey-operator/internal/rbacscope"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "rbacscope:", err)
		os.Exit(1)
	}
}

func run() error {
	role, err := os.ReadFile("config/rbac/role.yaml")
	if err != nil {
		return err
	}
	files, err := rbacscope.Files(role)
	if err != nil {
		return err
	}
	for path, data := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
