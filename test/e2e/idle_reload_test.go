package e2e

import (
	"context"
	"fmt"
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
// window.
func TestIdleClusterReloadTicksVisitNoNode(t *testing.T) {
	t.Parallel()
	const role = "idle-reload-app"
	createRole(t, role, valkeyv1.ValkeyRoleSpec{
		Categories: []valkeyv1.CategoryRule{{Name: "read", Access: valkeyv1.RuleAllow}},
	})
	ca := testcerts.NewCA("idle-reload-ca")
	f := &aclFixture{newTLSCluster(t, "idle-reload", ca, 1, 1)}
	f.setACL([]valkeyv1.AclBinding{
		binding("reader", []valkeyv1.PasswordHash{passwordHash("reader-pw")}, role, keys("r:*", valkeyv1.KeyAccessRead)),
	})
	f.waitACLApplied(time.Minute)
	f.waitCondition(valkeyv1.CondCertificatesServed, metav1.ConditionTrue, valkeyv1.ReasonServingCurrent,
		fmt.Sprintf("all 2 nodes serve the certificate in Secret %q", f.secret), time.Minute)

	// One connection per node for the whole window: the test's own reads
	// add no connection, and INFO is not ACL LIST.
	nodes := f.tlsOperatorNodes(ca.CertPEM)
	before := map[string]nodeCounters{}
	for pod, n := range nodes {
		before[pod] = readCounters(t, pod, n)
	}
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
		n, err := valkey.Dial(context.Background(), valkey.Target{
			Address:  net.JoinHostPort(p.Status.PodIP, "6379"),
			TLS:      &valkey.TLS{CA: caPEM, ServerName: render.PodFQDN(p.Name, f.name, f.ns, clusterDomain)},
			Username: render.OperatorUser, Password: string(s.Data[render.KeyOperatorPassword]),
			Dialer: local.Runtime.DialContext,
		})
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
