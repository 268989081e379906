package valkey

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// A TLS target must get nothing but a TLS handshake: no HELLO, no AUTH and
// above all no password in plaintext, even when the peer speaks RESP.
func TestDialTLSNeverSendsPlaintext(t *testing.T) {
	pki := newTestPKI(t)
	var (
		mu       sync.Mutex
		received bytes.Buffer
		dialed   int
	)
	target := Target{
		Address:  "10.0.0.5:6379",
		Username: operatorUser,
		Password: operatorPassword,
		TLS:      &TLS{CA: pki.ca.CertPEM, ServerName: podFQDN},
		Timeout:  time.Second,
		// A plaintext RESP server: reads what arrives, answers an error.
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			client, server := net.Pipe()
			mu.Lock()
			dialed++
			mu.Unlock()
			go func() {
				defer server.Close()
				buf := make([]byte, 4096)
				_ = server.SetDeadline(time.Now().Add(2 * time.Second))
				n, _ := server.Read(buf)
				mu.Lock()
				received.Write(buf[:n])
				mu.Unlock()
				_, _ = server.Write([]byte("-ERR unknown command\r\n"))
			}()
			return client, nil
		},
	}
	n, err := Dial(context.Background(), target)
	if err == nil {
		n.Close()
		t.Fatal("Dial succeeded against a plaintext server")
	}
	mu.Lock()
	defer mu.Unlock()
	if dialed == 0 {
		t.Fatal("the custom dialer was not used")
	}
	got := received.Bytes()
	if len(got) == 0 || got[0] != 0x16 {
		t.Fatalf("first byte sent = %x, want a TLS handshake record (16)", got[:min(1, len(got))])
	}
	for _, secret := range []string{"HELLO", "AUTH", operatorPassword} {
		if bytes.Contains(got, []byte(secret)) {
			t.Fatalf("%q sent in plaintext to a TLS target", secret)
		}
	}
	if !strings.Contains(err.Error(), "TLS handshake") {
		t.Fatalf("error does not name the handshake: %v", err)
	}
}

func TestDialRejectsUnusableTargets(t *testing.T) {
	pki := newTestPKI(t)
	tests := []struct {
		name   string
		target Target
		want   string
	}{
		{"no address", Target{}, "empty address"},
		{"no server name", Target{Address: "10.0.0.5:6379", TLS: &TLS{CA: pki.ca.CertPEM}}, "server name"},
		{"CA without certificates", Target{Address: "10.0.0.5:6379", TLS: &TLS{CA: []byte("not pem"), ServerName: podFQDN}}, "no certificate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := Dial(context.Background(), tc.target)
			if err == nil {
				n.Close()
				t.Fatal("Dial succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestDialHonoursCallerContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	target := Target{
		Address: "10.0.0.5:6379",
		Timeout: time.Minute,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			cancel()
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}
	start := time.Now()
	n, err := Dial(ctx, target)
	if err == nil {
		n.Close()
		t.Fatal("Dial succeeded")
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("Dial ignored the cancelled context for %s", time.Since(start))
	}
}
