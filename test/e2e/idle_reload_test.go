package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/testcerts"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// idleWindow is longer than two reload ticks of the shipped defaults, so an
// operator that visits the nodes on every tick is seen doing it.
const idleWindow = 75 * time.Second

// An idle cluster costs its nodes nothing new: with the certificate and the
// ACL file unchanged and every node known to use them, the reloaders' ticks
// open no connection (no TLS handshake to probe the served certificate)
// and list no node's ACL rules; at most one safety pass may fall into the
// window. A change still reaches the nodes at once.
// Not parallel: the pacing is the shipped one (the suite's operator has a
// safety pass every 30 s), so it replaces the suite's operator with the
// operator process that can reach the local runtime's TLS files.
func TestIdleClusterReloadTicksVisitNoNode(t *testing.T) {
	argv, kubeconfig := operatorProcessesInstead(t, localOperator)
	const own = "idle-reload-operator"
	createNamespace(t, own)
	startOperatorProcess(t, append(argv, "--operator-namespace", own), kubeconfig, own, "local")
	const role = "idle-reload-app"
	createRole(t, role, valkeyv1.ValkeyRoleSpec{
		Categories: []valkeyv1.CategoryRule{{Name: "read", Access: valkeyv1.RuleAllow}},
	})
	ca := testcerts.NewCA("idle-reload-ca")
	f := &aclFixture{newTLSCluster(t, "idle-reload", ca, 1, 1)}
	f.setACL([]valkeyv1.AclBinding{
		binding("reader", []valkeyv1.PasswordHash{passwordHash("reader-pw")}, role, keys("r:*", valkeyv1.KeyAccessRead)),
	})
	// ACLApplied was True before the binding too: the binding is waited
	// for on the nodes themselves.
	eventually(t, 90*time.Second, "the binding on every node", func() error {
		for _, p := range f.pods() {
			n, err := f.dialTLS(p, ca.CertPEM, "reader", "reader-pw")
			if err != nil {
				return err
			}
			n.Close()
		}
		return nil
	})
	f.waitACLApplied(time.Minute)
	f.waitCondition(valkeyv1.CondCertificatesServed, metav1.ConditionTrue, valkeyv1.ReasonServingCurrent,
		fmt.Sprintf("all 2 nodes serve the certificate in Secret %q", f.secret), time.Minute)

	// One connection per node for the whole window: the test's own reads
	// add no connection, and INFO is not ACL LIST.
	nodes := f.tlsOperatorNodes(ca.CertPEM)
	before := settledCounters(t, nodes)
	<-time.After(idleWindow)
	for pod, n := range nodes {
		after := readCounters(t, pod, n)
		if opened := after.connections - before[pod].connections; opened != 0 {
			t.Errorf("node %s: the operator opened %d connections during %s of an idle cluster, want none", pod, opened, idleWindow)
		}
		if listed := after.aclLists - before[pod].aclLists; listed > 1 {
			t.Errorf("node %s: ACL LIST ran %d times during %s of an idle cluster, want at most one safety pass", pod, listed, idleWindow)
		}
	}

	// The watches still wake an idle cluster: a new certificate and a new
	// password reach every node without waiting for a safety pass.
	next := testcerts.Leaf(ca, f.name, f.ns, clusterDomain)
	start := time.Now()
	f.rotate(next, ca.CertPEM)
	f.waitServing(ca.CertPEM, next, time.Minute)
	t.Logf("idle cluster: Secret updated to every node serving the new certificate after %s", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	f.setACL([]valkeyv1.AclBinding{
		binding("reader", []valkeyv1.PasswordHash{passwordHash("reader-pw-2")}, role, keys("r:*", valkeyv1.KeyAccessRead)),
	})
	eventually(t, time.Minute, "the new password on every node", func() error {
		for _, p := range f.pods() {
			n, err := f.dialTLS(p, ca.CertPEM, "reader", "reader-pw-2")
			if err != nil {
				return fmt.Errorf("node %s: %w", p.Name, err)
			}
			n.Close()
		}
		return nil
	})
	t.Logf("idle cluster: binding edited to the new password on every node after %s", time.Since(start).Round(time.Millisecond))
}

// settleQuiet is how long the nodes' counters must stand still before the
// window opens: the last pass of the binding's reload, and the one new
// connection each controller makes once the reloader records the leaves it
// verified (a kept connection is keyed by them), end well within it.
const settleQuiet = 5 * time.Second

// settledCounters waits until no node's counters moved for settleQuiet
// and returns them.
func settledCounters(t testing.TB, nodes map[string]*valkey.Node) map[string]nodeCounters {
	t.Helper()
	read := func() map[string]nodeCounters {
		out := map[string]nodeCounters{}
		for pod, n := range nodes {
			out[pod] = readCounters(t, pod, n)
		}
		return out
	}
	last, lastAt := read(), time.Now()
	eventually(t, time.Minute, "the operator to finish with the nodes", func() error {
		if time.Since(lastAt) < settleQuiet {
			return errors.New("not quiet for long enough yet")
		}
		now := read()
		if !maps.Equal(now, last) {
			last, lastAt = now, time.Now()
			return fmt.Errorf("counters moved: %v", now)
		}
		return nil
	})
	return last
}

// nodeCounters are the INFO counters an idle tick must leave alone.
type nodeCounters struct {
	connections int64
	aclLists    int64
}

func readCounters(t testing.TB, pod string, n *valkey.Node) nodeCounters {
	t.Helper()
	info, err := n.Info(context.Background(), "stats", "commandstats")
	if err != nil {
		t.Fatalf("INFO on %s: %v", pod, err)
	}
	conns, err := strconv.ParseInt(info["stats"]["total_connections_received"], 10, 64)
	if err != nil {
		t.Fatalf("total_connections_received on %s: %v", pod, err)
	}
	return nodeCounters{connections: conns, aclLists: commandCalls(info["commandstats"]["cmdstat_acl|list"])}
}

// commandCalls reads calls= from a commandstats line; a command never run
// has no line.
func commandCalls(line string) int64 {
	for _, field := range strings.Split(line, ",") {
		if v, ok := strings.CutPrefix(field, "calls="); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// tlsOperatorNodes connects to every node over TLS as the operator's user,
// which may run INFO once the default user is closed; the connections are
// closed when the test ends.
func (f *aclFixture) tlsOperatorNodes(caPEM []byte) map[string]*valkey.Node {
	f.t.Helper()
	var s corev1.Secret
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: render.OperatorAuthSecretName(f.name)}, &s); err != nil {
		f.t.Fatal(err)
	}
	out := map[string]*valkey.Node{}
	for _, p := range f.pods() {
		n, err := f.dialTLS(p, caPEM, render.OperatorUser, string(s.Data[render.KeyOperatorPassword]))
		if err != nil {
			f.t.Fatalf("connecting to %s as the operator: %v", p.Name, err)
		}
		f.t.Cleanup(n.Close)
		out[p.Name] = n
	}
	if len(out) != 2 {
		f.t.Fatalf("%d pods, want 2", len(out))
	}
	return out
}

// dialTLS connects to one pod over TLS, verified with the pod's own name,
// as user.
func (f *aclFixture) dialTLS(p corev1.Pod, caPEM []byte, user, password string) (*valkey.Node, error) {
	return valkey.Dial(context.Background(), valkey.Target{
		Address:  net.JoinHostPort(p.Status.PodIP, "6379"),
		TLS:      &valkey.TLS{CA: caPEM, ServerName: render.PodFQDN(p.Name, f.name, f.ns, clusterDomain)},
		Username: user, Password: password,
		Dialer: local.Runtime.DialContext,
	})
}
