package kubectlvalkey

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/testcerts"
)

const (
	testNS      = "app"
	testCluster = "cache"
	testSecret  = "cache-tls"
	testService = "cache.app.svc.cluster.local"
)

// serverMode is how a fakeValkey listens.
type serverMode int

const (
	modeTLS       serverMode = iota // TLS only, as a TLS cluster's node
	modePlaintext                   // plaintext only
	modeBoth                        // TLS or plaintext, told apart by the first byte
)

// fakeValkey answers PING and AUTH on a loopback port.
type fakeValkey struct {
	ln       net.Listener
	mode     serverMode
	cert     *testcerts.LeafCert
	password string // empty: the default user is open
	wg       sync.WaitGroup
}

func startFake(t *testing.T, mode serverMode, cert *testcerts.LeafCert, password string) *fakeValkey {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeValkey{ln: ln, mode: mode, cert: cert, password: password}
	f.wg.Add(1)
	go f.serve()
	t.Cleanup(func() { ln.Close(); f.wg.Wait() })
	return f
}

func (f *fakeValkey) addr() string { return f.ln.Addr().String() }

func (f *fakeValkey) serve() {
	defer f.wg.Done()
	for {
		conn, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer conn.Close()
			f.handle(conn)
		}()
	}
}

// sniffed replays a byte read to tell TLS from plaintext.
type sniffed struct {
	net.Conn
	r *bufio.Reader
}

func (s sniffed) Read(p []byte) (int, error) { return s.r.Read(p) }

func (f *fakeValkey) handle(conn net.Conn) {
	useTLS := f.mode == modeTLS
	if f.mode == modeBoth {
		r := bufio.NewReader(conn)
		first, err := r.Peek(1)
		if err != nil {
			return
		}
		useTLS = first[0] == 0x16 // a TLS handshake record
		conn = sniffed{Conn: conn, r: r}
	}
	if useTLS {
		tc := tls.Server(conn, &tls.Config{Certificates: []tls.Certificate{{
			Certificate: f.cert.DER(), PrivateKey: f.cert.Key,
		}}})
		if err := tc.Handshake(); err != nil {
			return
		}
		conn = tc
	}
	r := bufio.NewReader(conn)
	authed := f.password == ""
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		var reply string
		switch strings.ToUpper(args[0]) {
		case "AUTH":
			if args[len(args)-1] == f.password {
				authed, reply = true, "+OK"
			} else {
				reply = "-WRONGPASS invalid username-password pair or user is disabled."
			}
		case "PING":
			if authed {
				reply = "+PONG"
			} else {
				reply = "-NOAUTH Authentication required."
			}
		default:
			reply = "-ERR unknown command"
		}
		if _, err := io.WriteString(conn, reply+"\r\n"); err != nil {
			return
		}
	}
}

// readCommand reads one RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "*") {
		return nil, fmt.Errorf("not an array: %q", line)
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || n < 1 {
		return nil, fmt.Errorf("bad array length %q", line)
	}
	args := make([]string, n)
	for i := range args {
		if _, err := r.ReadString('\n'); err != nil {
			return nil, err
		}
		v, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		args[i] = strings.TrimRight(v, "\r\n")
	}
	return args, nil
}

// routes sends pod addresses to fake servers, as a pod network would.
func routes(table map[string]string) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if to, ok := table[addr]; ok {
			addr = to
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

func resolves(table map[string][]string) ResolveFunc {
	return func(_ context.Context, host string) ([]string, error) {
		if addrs, ok := table[host]; ok {
			return addrs, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
}

func tlsCluster() *valkeyv1.ValkeyCluster {
	return &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: testCluster},
		Spec: valkeyv1.ValkeyClusterSpec{ConfigRef: "standard", Shards: 1, ReplicasPerShard: 1,
			TLS: &valkeyv1.TLSSpec{SecretRef: testSecret}},
	}
}

func pod(name, ip string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, Labels: render.PodLabels(testCluster, 0)},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip},
	}
}

func fakeClient(t *testing.T, objs ...client.Object) client.Reader {
	t.Helper()
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...)
	// The fields the API server selects Events by.
	for field, value := range map[string]func(e *corev1.Event) string{
		"involvedObject.kind": func(e *corev1.Event) string { return e.InvolvedObject.Kind },
		"involvedObject.name": func(e *corev1.Event) string { return e.InvolvedObject.Name },
		"reason":              func(e *corev1.Event) string { return e.Reason },
	} {
		b = b.WithIndex(&corev1.Event{}, field, func(o client.Object) []string { return []string{value(o.(*corev1.Event))} })
	}
	return b.Build()
}
