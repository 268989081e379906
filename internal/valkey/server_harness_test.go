package valkey

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Users every test server knows. The operator user here may run every
// CLUSTER subcommand, so that these tests can exercise Node methods the
// operator does not call; the production grants are proven in
// internal/render (TestSystemUsersOnValkey).
const (
	operatorUser     = "_momento_operator"
	operatorPassword = "operator-secret"
	moverUser        = "mover"
	moverPassword    = "mover-secret"
)

const testACL = `user default on nopass ~* &* +@all
user ` + operatorUser + ` on >` + operatorPassword + ` +cluster +acl|load +ping +info +config|set
user ` + moverUser + ` on >` + moverPassword + ` ~* &* +@all
`

// testServer is one valkey-server process owned by a test.
type testServer struct {
	IP      string
	Port    int
	BusPort int
	Dir     string
	log     string
	exited  chan struct{}
	// pid is the server's process (and process group).
	pid int
}

func (s *testServer) Addr() string { return net.JoinHostPort(s.IP, strconv.Itoa(s.Port)) }

// operatorTarget is how the operator would address s in plaintext mode.
func (s *testServer) operatorTarget() Target {
	return Target{Address: s.Addr(), Username: operatorUser, Password: operatorPassword}
}

// valkeyArgv returns the command running the Valkey 8 server on PATH. A
// missing server fails the test: make test installs it, and a skip would
// pass without the real server ever being asked.
func valkeyArgv(t *testing.T) []string {
	t.Helper()
	bin, err := exec.LookPath("valkey-server")
	if err != nil {
		t.Fatal("no valkey-server installed (make valkey)")
	}
	return []string{bin}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startServer runs valkey-server with the base settings plus conf lines,
// in its own process group so cleanup kills everything it started.
// listen is "port" for plaintext or "tls-port" for TLS-only.
func startServer(t *testing.T, argv []string, listen string, conf ...string) *testServer {
	t.Helper()
	s := &testServer{IP: "127.0.0.1", Port: freePort(t), Dir: t.TempDir(), exited: make(chan struct{})}
	s.log = filepath.Join(s.Dir, "valkey.log")
	aclPath := filepath.Join(s.Dir, "users.acl")
	if err := os.WriteFile(aclPath, []byte(testACL), 0o600); err != nil {
		t.Fatal(err)
	}
	lines := []string{
		"bind 127.0.0.1",
		"dir " + s.Dir,
		"logfile " + s.log,
		"aclfile " + aclPath,
		`save ""`,
		"appendonly no",
	}
	if listen == "port" {
		lines = append(lines, fmt.Sprintf("port %d", s.Port))
	} else {
		lines = append(lines, "port 0", fmt.Sprintf("%s %d", listen, s.Port))
	}
	lines = append(lines, conf...)
	confPath := filepath.Join(s.Dir, "valkey.conf")
	if err := os.WriteFile(confPath, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	cmd := exec.Command(argv[0], append(argv[1:], confPath)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting valkey-server: %v", err)
	}
	s.pid = cmd.Process.Pid
	go func() { _ = cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	})

	// Ready once the port accepts connections.
	eventually(t, 10*time.Second, "valkey-server listening on "+s.Addr(), func() error {
		select {
		case <-s.exited:
			logText, _ := os.ReadFile(s.log)
			t.Fatalf("valkey-server exited early:\n%s\n%s", out.String(), logText)
		default:
		}
		c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	})
	return s
}

// startClusterServer starts a cluster-mode node with an explicit bus port.
func startClusterServer(t *testing.T, argv []string) *testServer {
	t.Helper()
	bus := freePort(t)
	s := startServer(t, argv, "port",
		"cluster-enabled yes",
		fmt.Sprintf("cluster-port %d", bus),
		"cluster-config-file nodes.conf",
		"cluster-node-timeout 2000",
		// The default 5 s wait for more replicas to share a full sync
		// would dominate the test's run time.
		"repl-diskless-sync-delay 0",
	)
	s.BusPort = bus
	return s
}

// eventually polls check until it succeeds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func dialT(t *testing.T, target Target) *Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := Dial(ctx, target)
	if err != nil {
		t.Fatalf("Dial(%s): %v", target.Address, err)
	}
	t.Cleanup(n.Close)
	return n
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func waitRoles(t *testing.T, nodes []*Node, want map[int]string) {
	t.Helper()
	ctx := testCtx(t)
	eventually(t, 15*time.Second, fmt.Sprintf("roles %v", want), func() error {
		for i, role := range want {
			repl, err := nodes[i].InfoReplication(ctx)
			if err != nil {
				return err
			}
			if repl.Role != role {
				return fmt.Errorf("node %d is %s", i, repl.Role)
			}
		}
		return nil
	})
}

// tagInRange finds a hash tag whose slot lies in r.
func tagInRange(t *testing.T, n *Node, r SlotRange) (string, int) {
	t.Helper()
	ctx := testCtx(t)
	for i := 0; i < 20000; i++ {
		tag := fmt.Sprint(i)
		slot, err := n.client.Do(ctx, n.client.B().ClusterKeyslot().Key("{"+tag+"}").Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		if r.Contains(int(slot)) {
			return tag, int(slot)
		}
	}
	t.Fatalf("no hash tag maps into %s", r)
	return "", 0
}
