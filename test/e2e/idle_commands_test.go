package e2e

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// shippedResync is the shipped operator's steady resync, reload tick and
// sample interval: the interval within which an idle node should hear each
// question at most once.
const shippedResync = 30 * time.Second

// questionsWindow spans three intervals.
const questionsWindow = 3 * shippedResync

// An idle cluster's nodes hear each question once per interval. With the
// operator binary as shipped (every timer at its default), over three
// intervals no command reaches a node more than once per interval, give
// or take one where two independent timers' phases cross, and the operator
// opens no connection: the observation, the reloaders and the autoscaler
// share one look (INFO) and kept connections. Before they did, INFO alone
// came three times per interval.
// Not parallel: it replaces the suite's operator, whose sampling is
// quickened for the autoscaling tests, with the shipped binary.
func TestIdleClusterAsksEachQuestionOncePerInterval(t *testing.T) {
	argv, kubeconfig := operatorProcessesInstead(t, shippedOperator)
	const own, ns = "idle-questions-operator", "idle-questions"
	createNamespace(t, own)
	startOperatorProcess(t, append(argv, "--operator-namespace", own), kubeconfig, own, "shipped")
	key := newPlainCluster(t, ns, "idle", 1, 1)

	nodes := map[string]*valkey.Node{}
	for _, name := range getCluster(t, key).Status.Nodes {
		n, err := valkey.Dial(context.Background(), valkey.Target{
			Address: net.JoinHostPort(getPod(t, ns, name).Status.PodIP, "6379"),
			Dialer:  local.Runtime.DialContext,
		})
		if err != nil {
			t.Fatalf("connecting to %s: %v", name, err)
		}
		t.Cleanup(n.Close)
		nodes[name] = n
	}
	// Past the first passes of every controller: two observations of each
	// node since it became Active.
	first := map[string]map[string]int64{}
	for name, n := range nodes {
		first[name] = commandCounts(t, name, n)
	}
	eventually(t, 3*shippedResync, "two observations since Active", func() error {
		for name, n := range nodes {
			if seen := commandCounts(t, name, n)["cluster|nodes"] - first[name]["cluster|nodes"]; seen < 2 {
				return fmt.Errorf("node %s observed %d times since Active", name, seen)
			}
		}
		return nil
	})

	before := map[string]map[string]int64{}
	for name, n := range nodes {
		before[name] = commandCounts(t, name, n)
	}
	<-time.After(questionsWindow) // the window being measured
	limit := int64(questionsWindow/shippedResync) + 1
	for name, n := range nodes {
		after := commandCounts(t, name, n)
		var asked []string
		for cmd, calls := range after {
			d := calls - before[name][cmd]
			if cmd == "info" {
				d-- // the test's own INFO that read before
			}
			if d > 0 {
				asked = append(asked, fmt.Sprintf("%s %d", cmd, d))
			}
			if !operatorQuestion(cmd) {
				continue
			}
			if d > limit {
				t.Errorf("node %s: %s ran %d times in %s of an idle cluster, want at most %d (once per %s)",
					name, cmd, d, questionsWindow, limit, shippedResync)
			}
		}
		if opened := after["connections"] - before[name]["connections"]; opened != 0 {
			t.Errorf("node %s: the operator opened %d connections in %s of an idle cluster, want none", name, opened, questionsWindow)
		}
		t.Logf("node %s over %s: %s", name, questionsWindow, strings.Join(asked, ", "))
	}
	if vc := getCluster(t, key); vc.Status.State != valkeyv1.StateActive {
		t.Fatalf("cluster %s after the window, want Active", vc.Status.State)
	}
}

// operatorQuestion says whether a command counts as a question the
// operator asks. Not counted: a replica's REPLCONF ACKs and the PINGs its
// primary sends it (replication itself), and the client library's PING on
// a kept connection that has been idle for a while (how a kept connection
// is known to be alive; the limit the fleet benchmark compares with is a
// PING loop).
func operatorQuestion(cmd string) bool {
	switch cmd {
	case "connections", "replconf", "psync", "sync", "ping":
		return false
	}
	return true
}

// commandCounts is every command's calls on the node, and its
// connections received under "connections", from one INFO.
func commandCounts(t testing.TB, name string, n *valkey.Node) map[string]int64 {
	t.Helper()
	info, err := n.Info(context.Background(), "stats", "commandstats")
	if err != nil {
		t.Fatalf("INFO on %s: %v", name, err)
	}
	out := map[string]int64{}
	for k, v := range info["commandstats"] {
		out[strings.TrimPrefix(k, "cmdstat_")] = commandCalls(v)
	}
	c, err := strconv.ParseInt(info["stats"]["total_connections_received"], 10, 64)
	if err != nil {
		t.Fatalf("total_connections_received on %s: %v", name, err)
	}
	out["connections"] = c
	return out
}
