// Package testregistry runs a real image registry (the distribution
// registry, built into bin/testbin by hack/build-testbin.sh) for tests: a
// fresh one per test on a free port of 127.0.0.1, plain HTTP, with one
// user under htpasswd authentication, storing blobs in the test's
// temporary directory. It is what a private mirror is to a cluster: pods
// pull from it only with a pull secret.
package testregistry

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/crypto/bcrypt"

	"github.com/gomomento/valkey-operator/internal/testbin"
)

// Binary is the registry's name in bin/testbin.
const Binary = "registry"

// Registry is one running registry.
type Registry struct {
	// Host is 127.0.0.1:<port>, the registry part of the image names it
	// serves.
	Host     string
	User     string
	Password string

	log *syncBuffer
}

// Start runs a registry until the test ends. A missing binary fails the
// test: make testbin builds it.
func Start(t testing.TB) *Registry {
	t.Helper()
	dir, err := testbin.Dir(Binary)
	if err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	r := &Registry{Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		User: "mirror", Password: "mirror-test-password", log: &syncBuffer{}}
	work := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte(r.Password), bcrypt.DefaultCost)
	if err != nil {
		t.Fatal(err)
	}
	htpasswd := filepath.Join(work, "htpasswd")
	if err := os.WriteFile(htpasswd, []byte(r.User+":"+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(work, "config.yml")
	if err := os.WriteFile(config, []byte(configYAML(r.Host, filepath.Join(work, "storage"), htpasswd)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, Binary), "serve", config)
	cmd.Stdout, cmd.Stderr = r.log, r.log
	// No collector to send traces to.
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", Binary, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		if t.Failed() {
			t.Logf("registry log:\n%s", r.Log())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("%s exited early:\n%s", Binary, r.Log())
		default:
		}
		// Up and asking for credentials: the API root answers 401.
		resp, err := http.Get("http://" + r.Host + "/v2/")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				return r
			}
			err = fmt.Errorf("GET /v2/ answered %s without credentials, want 401", resp.Status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not serving on %s: %v\n%s", Binary, r.Host, err, r.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// configYAML is the registry's configuration: plain HTTP on host, blobs
// under storage, every request authenticated against htpasswd.
func configYAML(host, storage, htpasswd string) string {
	return fmt.Sprintf(`version: 0.1
log:
  level: info
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: %q
http:
  addr: %q
auth:
  htpasswd:
    realm: test-registry
    path: %q
`, storage, host, htpasswd)
}

// Push writes img to the registry as repository:tag (repository without
// the registry part) with the user's credentials, and returns the full
// name pods pull it by.
func (r *Registry) Push(ctx context.Context, img v1.Image, repositoryTag string) (string, error) {
	ref := r.Host + "/" + repositoryTag
	tag, err := name.NewTag(ref, name.Insecure)
	if err != nil {
		return "", fmt.Errorf("image name %q: %w", ref, err)
	}
	if err := remote.Write(tag, img, remote.WithContext(ctx),
		remote.WithAuth(&authn.Basic{Username: r.User, Password: r.Password})); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	return ref, nil
}

// DockerConfigJSON is the .dockerconfigjson of a kubernetes.io/dockerconfigjson
// Secret for the registry with password.
func (r *Registry) DockerConfigJSON(password string) []byte {
	return fmt.Appendf(nil, `{"auths":{%q:{"username":%q,"password":%q}}}`, r.Host, r.User, password)
}

// Log is what the registry has written so far, its access log included.
func (r *Registry) Log() string { return r.log.String() }

// syncBuffer is the registry's output, read while it writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port on 127.0.0.1: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
