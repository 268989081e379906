package v1alpha1_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gomomento/valkey-operator/internal/testbin"
)

// The committed CRDs, RBAC role and deepcopy code must be exactly what the markers
// generate; run `make generate` when this fails.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	root, err := testbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	run := func(args ...string) []byte {
		cmd := exec.Command("go", append([]string{"tool", "controller-gen"}, args...)...)
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("controller-gen %v: %v\n%s", args, err, stderr.String())
		}
		return out
	}
	run("crd:allowDangerousTypes=true", "paths=./api/...", "output:crd:artifacts:config="+tmp)

	committedDir := filepath.Join(root, "config", "crd", "bases")
	generated, _ := filepath.Glob(filepath.Join(tmp, "*.yaml"))
	committed, _ := filepath.Glob(filepath.Join(committedDir, "*.yaml"))
	if len(generated) == 0 || len(generated) != len(committed) {
		t.Fatalf("generated %d CRDs, %d committed: run make generate", len(generated), len(committed))
	}
	for _, g := range generated {
		want, _ := os.ReadFile(g)
		got, err := os.ReadFile(filepath.Join(committedDir, filepath.Base(g)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run make generate", filepath.Base(g))
		}
	}

	rbacDir := t.TempDir()
	run("rbac:roleName=valkey-operator", "paths=./internal/controller/...", "output:rbac:artifacts:config="+rbacDir)
	wantRole, _ := os.ReadFile(filepath.Join(rbacDir, "role.yaml"))
	gotRole, err := os.ReadFile(filepath.Join(root, "config", "rbac", "role.yaml"))
	if err != nil || len(wantRole) == 0 || !bytes.Equal(gotRole, wantRole) {
		t.Errorf("config/rbac/role.yaml is stale: run make generate")
	}

	deepcopy := run("object", "paths=./api/...", "output:object:stdout")
	got, err := os.ReadFile(filepath.Join(root, "api", "v1alpha1", "zz_generated.deepcopy.go"))
	if err != nil || !bytes.Equal(got, deepcopy) {
		t.Errorf("api/v1alpha1/zz_generated.deepcopy.go is stale: run make generate")
	}
}
