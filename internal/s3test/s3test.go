// Package s3test runs a real S3-compatible server (versitygw, built into
// bin/testbin by hack/build-testbin.sh) for tests: a fresh one per test,
// on a free port of 127.0.0.1 (or the address ListenOn names), storing
// objects in the test's temporary directory.
package s3test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/gomomento/valkey-operator/internal/testbin"
)

// Binary is the server's name in bin/testbin.
const Binary = "versitygw"

// Server is one running versitygw.
type Server struct {
	// Endpoint is http://<address>:<port>.
	Endpoint string
	// Host is <address>:<port>.
	Host      string
	AccessKey string
	SecretKey string
	// Dir holds the buckets, one directory each.
	Dir string
}

// Option changes where Start's server listens.
type Option func(*settings)

type settings struct{ address string }

// ListenOn makes the server listen on address (an IP of this machine)
// instead of 127.0.0.1: one a pod's network namespace reaches too, such
// as the address of a node's bridge or the node's own IP.
func ListenOn(address string) Option {
	return func(s *settings) { s.address = address }
}

// Start runs a server until the test ends. A missing binary fails the
// test: make testbin builds it, and a skip would pass without a store.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	set := settings{address: "127.0.0.1"}
	for _, o := range opts {
		o(&set)
	}
	dir, err := testbin.Dir(Binary)
	if err != nil {
		t.Fatal(err)
	}
	port, err := freePort(set.address)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{
		Host:      net.JoinHostPort(set.address, strconv.Itoa(port)),
		AccessKey: "backup-test-access",
		SecretKey: "backup-test-secret-key",
		Dir:       t.TempDir(),
	}
	s.Endpoint = "http://" + s.Host
	var out bytes.Buffer
	cmd := exec.Command(filepath.Join(dir, Binary),
		"--access", s.AccessKey, "--secret", s.SecretKey, "--port", s.Host, "posix", s.Dir)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", Binary, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("%s exited early:\n%s", Binary, out.String())
		default:
		}
		c, err := net.DialTimeout("tcp", s.Host, time.Second)
		if err == nil {
			_ = c.Close()
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not listening on %s: %v\n%s", Binary, s.Host, err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Client is a client of s with its own credentials.
func (s *Server) Client(t testing.TB) *minio.Client {
	t.Helper()
	c, err := minio.New(s.Host, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""), Secure: false})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// MakeBucket creates a bucket.
func (s *Server) MakeBucket(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Client(t).MakeBucket(ctx, name, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("creating bucket %s: %v", name, err)
	}
}

func freePort(address string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(address, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port on %s: %w", address, err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
