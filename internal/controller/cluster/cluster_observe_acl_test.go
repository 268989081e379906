package cluster

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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/testbin"
)

// A Valkey 9 node is observed with the ACL file of any cluster it can be
// part of: one whose nodes all run 9, and one with a node still on 8 (an
// upgrade under way), whose file cannot grant CLUSTER GETSLOTMIGRATIONS.
func TestObserveValkey9NodeWithEitherACL(t *testing.T) {
	for _, lowest := range []string{"8.0.3", "9.1.2"} {
		t.Run("lowest "+lowest, func(t *testing.T) {
			conn := observedConnector(t, lowest)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c-0", UID: "pod-c-0"}, Status: corev1.PodStatus{PodIP: "127.0.0.1"}}
			view, version, settings, err := (&Reconciler{}).observeNode(context.Background(), conn, client.ObjectKeyFromObject(conn.Cluster), pod, []string{"maxmemory", "maxmemory-policy"})
			if err != nil {
				t.Fatalf("observing a Valkey 9 node with the ACL file for lowest version %s: %v", lowest, err)
			}
			if version.Major != 9 || view == nil || view.ID == "" || view.AtomicMigrationInFlight {
				t.Fatalf("observed version %s, view %+v", version, view)
			}
			// The drift check reads the live settings as the operator.
			if settings.err != nil || settings.values["maxmemory-policy"] != "noeviction" || settings.values["maxmemory"] != "0" {
				t.Fatalf("live settings read = %v, %v", settings.values, settings.err)
			}
		})
	}
}

// observedConnector starts a Valkey 9 node with the ACL file of a cluster
// whose lowest version is lowest and returns how the operator dials it.
func observedConnector(t *testing.T, lowest string) *nodeconn.Connector {
	t.Helper()
	argv := testbin.Valkey9Server()
	if argv == nil {
		t.Fatal("no Valkey 9 in bin/valkey9 (hack/install-valkey9.sh)")
	}
	const password = "operator-test-password"
	acl, err := render.ACLFile(nil, render.Passwords{Operator: password, Replication: "repl-test-password"}, lowest, false)
	if err != nil {
		t.Fatal(err)
	}
	addr := startObservedNode(t, argv, acl)
	return &nodeconn.Connector{
		Cluster:  &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}},
		Password: password,
		Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
}

func startObservedNode(t *testing.T, argv []string, acl string) string {
	t.Helper()
	dir := t.TempDir()
	port, bus := freePort(t), freePort(t)
	conf := strings.Join([]string{
		"bind 127.0.0.1", "dir " + dir, "logfile " + filepath.Join(dir, "valkey.log"),
		"aclfile " + filepath.Join(dir, "users.acl"), `save ""`, "appendonly no",
		"cluster-enabled yes", "cluster-config-file nodes.conf", fmt.Sprintf("cluster-port %d", bus),
		fmt.Sprintf("port %d", port),
	}, "\n") + "\n"
	for name, data := range map[string]string{"users.acl": acl, "valkey.conf": conf} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	cmd := exec.Command(argv[0], append(argv[1:], filepath.Join(dir, "valkey.conf"))...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	poll(t, 10*time.Second, "valkey-server listening on "+addr, func() error {
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "valkey.log"))
			t.Fatalf("valkey-server exited: %s\n%s", out.String(), log)
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	})
	return addr
}
