package testbin

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// StartPlainValkey runs the valkey-server on PATH, not in cluster mode and
// without a password, on a free loopback port, with extra arguments after
// the base ones, and returns its address once it listens. The test's
// cleanup kills it.
func StartPlainValkey(t testing.TB, extra ...string) string {
	t.Helper()
	bin, err := exec.LookPath("valkey-server")
	if err != nil {
		t.Fatal("no valkey-server installed (make valkey)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	dir := t.TempDir()
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--logfile", filepath.Join(dir, "valkey.log")}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-exited })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "valkey.log"))
			t.Fatalf("valkey-server on %s: %v\n%s", addr, err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
