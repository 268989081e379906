package render

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomomento/valkey-operator/internal/testbin"
)

// A real valkey-server checks that what this package renders is accepted by
// Valkey itself, not just that it matches strings we wrote.

// valkeyServer is one installed valkey-server: argv runs it.
type valkeyServer struct {
	name    string
	argv    []string
	version string
}

// valkeyServers lists the servers make valkey installs: valkey-server on
// PATH (Valkey 8 from the host) and Valkey 9 in bin/valkey9
// (hack/install-valkey9.sh), run through its own loader. Either missing
// fails the test, which would otherwise pass on the other alone.
func valkeyServers(t *testing.T) []valkeyServer {
	t.Helper()
	bin, err := exec.LookPath("valkey-server")
	if err != nil {
		t.Fatal("no valkey-server installed (make valkey)")
	}
	argv := testbin.Valkey9Server()
	if argv == nil {
		t.Fatal("no Valkey 9 in bin/valkey9 (hack/install-valkey9.sh)")
	}
	servers := []valkeyServer{{argv: []string{bin}}, {argv: argv}}
	for i := range servers {
		servers[i].version = versionOf(t, servers[i].argv)
		servers[i].name = "valkey-" + servers[i].version
	}
	return servers
}

// versionOf parses "Valkey server v=8.0.1 sha=...".
func versionOf(t *testing.T, argv []string) string {
	t.Helper()
	out, err := exec.Command(argv[0], append(argv[1:], "--version")...).Output()
	if err != nil {
		t.Fatalf("%q --version: %v", argv, err)
	}
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	t.Fatalf("no version in %q", out)
	return ""
}

// start runs the server with args on a free loopback port, without
// persistence, and returns its address; it is stopped when the test ends.
// Later arguments override the config file given first.
func (s valkeyServer) start(t *testing.T, args ...string) string {
	t.Helper()
	port := freePort(t)
	args = append(args, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir())
	return s.run(t, port, args...)
}

// run starts the server with args and waits until it listens on port.
func (s valkeyServer) run(t *testing.T, port int, args ...string) string {
	t.Helper()
	return runValkey(t, append(slices.Clone(s.argv), args...), port)
}

func runValkey(t *testing.T, argv []string, port int) string {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("valkey-server exited (%v):\n%s", err, out.String())
		default:
		}
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("valkey-server did not listen on %s:\n%s", addr, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// conn is a minimal RESP2 client: enough for AUTH, ACL and PING.
type conn struct {
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &conn{c: c, r: bufio.NewReader(c)}
}

// errReply is a RESP error reply.
type errReply string

func (e errReply) Error() string { return string(e) }

func (c *conn) do(args ...string) (any, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	_ = c.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.c.Write([]byte(b.String())); err != nil {
		return nil, err
	}
	return c.read()
}

func (c *conn) read() (any, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, errors.New("empty reply line")
	}
	switch body := line[1:]; line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, errReply(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, err
		}
		items := make([]any, 0, max(n, 0))
		for range n {
			item, err := c.read()
			if err != nil {
				return nil, err
			}
			items = append(items, item)
		}
		return items, nil
	default:
		return nil, fmt.Errorf("unexpected reply %q", line)
	}
}

// must runs a command that has to succeed and returns its reply.
func (c *conn) must(t *testing.T, args ...string) any {
	t.Helper()
	reply, err := c.do(args...)
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return reply
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
