package nodeimages

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gomomento/valkey-operator/internal/testbin"
)

// TestContainerdImport imports every image into a containerd of its own
// (own root, state and socket; nothing shared with a containerd already
// running) with ctr, as a node without a registry would, and runs each
// image's program from it under runc with a read-only root file system.
// It needs root and containerd, ctr and runc on PATH (make node).
func TestContainerdImport(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root: containerd and runc run as root")
	}
	for _, p := range []string{"containerd", "ctr", "runc"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("no %s installed (make node)", p)
		}
	}
	root, err := testbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "bin", "valkey9", "usr", "bin", "valkey-server")); err != nil {
		t.Fatal("no Valkey 9 tree (make valkey)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	imgs, err := BuildAll(ctx, Options{RepoRoot: root, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}

	ctr := startContainerd(t)
	for _, img := range imgs {
		ctr("images", "import", img.Path)
	}
	listed := ctr("images", "ls")
	for _, img := range imgs {
		if !lineWith(listed, img.FullName+" ", img.Digest.String()) {
			t.Errorf("%s with digest %s not imported:\n%s", img.FullName, img.Digest, listed)
		}
	}

	byName := map[string]Image{}
	for _, img := range imgs {
		byName[img.Name] = img
	}
	for i, c := range []struct {
		image string
		argv  []string
		want  string
	}{
		{"valkey/valkey:8.0.1", []string{"valkey-server", "--version"}, "v=8.0.1 "},
		{"valkey/valkey:9.1.2", []string{"valkey-server", "--version"}, "v=9.1.2 "},
		{"valkey/valkey:9.1.2", []string{"valkey-cli", "--version"}, "valkey-cli 9.1.2"},
		// The entrypoint, as root: it drops to the valkey user with setpriv.
		{"valkey/valkey:8.0.1", []string{"docker-entrypoint.sh", "--version"}, "v=8.0.1 "},
		{"oliver006/redis_exporter:v1.45.0", []string{ExporterPath, "--version"}, "Redis Metrics Exporter 1.45.0"},
		{"gomomento/valkey-operator:latest", []string{OperatorPath, "-version"}, "dev"},
	} {
		img, ok := byName[c.image]
		if !ok {
			t.Fatalf("no image %s built", c.image)
		}
		id := fmt.Sprintf("nodeimages-%d-%d", os.Getpid(), i)
		out := ctr(append([]string{"run", "--rm", "--read-only", img.FullName, id}, c.argv...)...)
		if !strings.Contains(out, c.want) {
			t.Errorf("%s %q: %q, want %q in it", c.image, c.argv, out, c.want)
		}
	}
}

func lineWith(out string, parts ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

// startContainerd runs a containerd whose every path is under a temporary
// directory and returns a function running ctr against it in the k8s.io
// namespace, as the kubelet's images live there. The test's cleanup stops
// it.
func startContainerd(t *testing.T) func(args ...string) string {
	t.Helper()
	// A short directory: the socket path must fit in sun_path.
	dir, err := os.MkdirTemp("", "ctrd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "containerd.sock")
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = %q
[plugins."io.containerd.internal.v1.opt"]
  path = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), sock, filepath.Join(dir, "opt"))
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("containerd", "--config", filepath.Join(dir, "config.toml"))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		log.Close()
	})
	ctr := func(args ...string) string {
		t.Helper()
		full := append([]string{"--address", sock, "--namespace", "k8s.io"}, args...)
		out, err := exec.Command("ctr", full...).CombinedOutput()
		if err != nil {
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("ctr %q: %v: %s\ncontainerd log:\n%s", args, err, out, b)
		}
		return string(out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := exec.Command("ctr", "--address", sock, "version").Run(); err == nil {
			break
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("containerd exited:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("containerd did not answer on %s:\n%s", sock, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return ctr
}
