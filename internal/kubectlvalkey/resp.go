package kubectlvalkey

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"time"
)

// command sends one command as a RESP array and returns the first line of
// the reply ("+PONG", "-NOAUTH ...", ...). PING and AUTH reply on one line,
// which is all verify-tls sends; a hand-rolled exchange keeps a client
// library's own handshake (HELLO, CLIENT SETINFO) from muddying which step
// failed.
func command(conn net.Conn, r *bufio.Reader, timeout time.Duration, args ...string) (string, error) {
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return "", fmt.Errorf("sending %s: %w", args[0], err)
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("reading the reply to %s: %w", args[0], err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// isACLError recognises the replies of a server that verified TLS but
// refused the client's identity or grants.
func isACLError(reply string) bool {
	for _, p := range []string{"-NOAUTH", "-WRONGPASS", "-NOPERM"} {
		if strings.HasPrefix(reply, p) {
			return true
		}
	}
	return false
}

// looksLikeRESP reports whether a plaintext reply came from a server
// speaking RESP in the clear: a simple string or an error line.
func looksLikeRESP(reply []byte) bool {
	return len(reply) > 0 && (reply[0] == '+' || reply[0] == '-')
}
