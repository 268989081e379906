package reload

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/aclplan"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
)

// fakeNode answers the connection handshake like a Valkey 8.0.1 replica
// (whose ACL LOAD is unsafe) or primary, and drops the connection when it
// receives the command named hangUpOn, as a node that dies mid-visit.
type fakeNode struct {
	replica  bool
	hangUpOn string
}

func (f fakeNode) serve(t *testing.T) nodeconn.DialFunc {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go f.conn(c)
		}
	}()
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, l.Addr().String())
	}
}

func (f fakeNode) conn(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		cmd := strings.ToUpper(strings.Join(args[:min(2, len(args))], " "))
		if f.hangUpOn != "" && strings.HasPrefix(cmd, f.hangUpOn) {
			return
		}
		var reply string
		switch {
		case strings.HasPrefix(cmd, "HELLO"):
			reply = "%1\r\n+server\r\n+valkey\r\n"
		case strings.HasPrefix(cmd, "INFO"):
			role := "master"
			if f.replica {
				role = "slave"
			}
			text := "# Server\r\nvalkey_version:8.0.1\r\n\r\n# Replication\r\nrole:" + role + "\r\n"
			reply = "$" + strconv.Itoa(len(text)) + "\r\n" + text + "\r\n"
		case cmd == "ACL LIST":
			reply = "*0\r\n"
		default:
			reply = "+OK\r\n"
		}
		if _, err := io.WriteString(c, reply); err != nil {
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
	if err != nil {
		return nil, err
	}
	args := make([]string, n)
	for i := range args {
		if line, err = r.ReadString('\n'); err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(line[1:]))
		if err != nil {
			return nil, err
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args[i] = string(buf[:size])
	}
	return args, nil
}

// Every visit to a node that could not be asked counts once as
// unreachable, wherever on the way the node went away; a visit that loaded
// the file counts as success; a node that already runs the rendered rules
// (the fake lists none) is not loaded at all.
func TestACLLoadsCountsEveryUnreachableNode(t *testing.T) {
	app := map[string]aclplan.User{"app": {On: true, NoPass: true}}
	for i, tt := range []struct {
		name   string
		node   fakeNode
		noDial bool
		want   map[string]aclplan.User
		result string
	}{
		{name: "connection refused", noDial: true, want: app, result: "unreachable"},
		{name: "gone before ACL LIST", node: fakeNode{hangUpOn: "ACL LIST"}, want: app, result: "unreachable"},
		{name: "gone before INFO", node: fakeNode{hangUpOn: "INFO"}, want: app, result: "unreachable"},
		{name: "gone before ACL LOAD", node: fakeNode{hangUpOn: "ACL LOAD"}, want: app, result: "unreachable"},
		{name: "replica gone before ACL SETUSER", node: fakeNode{replica: true, hangUpOn: "ACL SETUSER"}, want: app, result: "unreachable"},
		{name: "loaded", node: fakeNode{}, want: app, result: "success"},
		{name: "current: nothing to load", node: fakeNode{hangUpOn: "ACL LOAD"}, want: map[string]aclplan.User{}, result: ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "acl-metric", Name: fmt.Sprintf("c%d", i)}}
			var dial nodeconn.DialFunc
			if tt.noDial {
				dial = func(context.Context, string, string) (net.Conn, error) { return nil, errors.New("connection refused") }
			} else {
				dial = tt.node.serve(t)
			}
			conn := &nodeconn.Connector{Cluster: vc, Password: "secret", Dialer: dial}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: vc.Name + "-0"}, Status: corev1.PodStatus{PodIP: "10.0.0.1"}}
			r := &ACLReloader{}

			got := r.visit(t.Context(), vc, conn, pod, "user app on nopass", tt.want)

			if (got.Unreachable != nil) != (tt.result == "unreachable") {
				t.Errorf("node unreachable: %v, want %v", got.Unreachable, tt.result == "unreachable")
			}
			for _, result := range []string{"success", "rejected", "unreachable"} {
				want := 0.0
				if result == tt.result {
					want = 1
				}
				if n := aclLoadsCount(t, vc, result); n != want {
					t.Errorf("valkey_acl_loads_total{result=%q} = %v, want %v", result, n, want)
				}
			}
		})
	}
}

// aclLoadsCount reads valkey_acl_loads_total as the registry serves it.
func aclLoadsCount(t *testing.T, vc *valkeyv1.ValkeyCluster, result string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "valkey_acl_loads_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if got["namespace"] == vc.Namespace && got["cluster"] == vc.Name && got["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
